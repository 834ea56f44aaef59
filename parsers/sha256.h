// Sha256Hex: the SHA-256 digest (FIPS 180-4) of a byte string, as 64 lower-case
// hex digits. The judge needs it to place a real incident in the study or the
// set-aside split by its source address, so that anyone can recompute the split
// with `printf %s ADDRESS | sha256sum`; `ncclscan redact` keys its pseudonyms with it.
//
// Thread-safety: a pure function.
#ifndef NCCLSCAN_PARSERS_SHA256_H_
#define NCCLSCAN_PARSERS_SHA256_H_

#include <string>
#include <string_view>

namespace ncclscan {

std::string Sha256Hex(std::string_view data);

}  // namespace ncclscan

#endif  // NCCLSCAN_PARSERS_SHA256_H_
