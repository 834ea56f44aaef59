// PCI addresses as the tools beside NCCL spell them, compared as numbers.
//
// Thread-safety: pure function.
#ifndef NCCLSCAN_PARSERS_PCI_ADDRESS_H_
#define NCCLSCAN_PARSERS_PCI_ADDRESS_H_

#include <cstdint>
#include <string_view>

namespace ncclscan {

// A GPU's or NIC's PCI address as the number NCCL prints as its busId: NCCL's own
// hex "1b000", NVRM's "PCI:0000:1b:00" (no function), "0000:1b:00.0", nvidia-smi's
// "00000000:1B:00.0" all give 0x1b000 (domain << 20 | bus << 12 | device << 4 |
// function). -1 when s is not one of these forms.
int64_t PciBusNumber(std::string_view s);
}  // namespace ncclscan

#endif  // NCCLSCAN_PARSERS_PCI_ADDRESS_H_
