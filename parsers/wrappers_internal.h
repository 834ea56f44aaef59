// The pieces of parsers/wrappers.cc that its kernel-log part
// (wrappers_kernel.cc) shares. Not for use outside parsers/.
#ifndef NCCLSCAN_PARSERS_WRAPPERS_INTERNAL_H_
#define NCCLSCAN_PARSERS_WRAPPERS_INTERNAL_H_

#include <cstddef>
#include <string_view>

#include "parsers/parsed_line.h"

namespace ncclscan::wrappers_internal {

// What one kind of wrapper made of the front of a line. kNoWrapper says the
// line starts the way that kind does ('[' or '(') but is none of its forms:
// then no later kind is tried either, as their tests would misread it.
enum class Strip { kNotThis, kStripped, kNoWrapper };

// A token that can be a host name: letters, digits, '-', '.', '_', one letter at least.
bool LooksLikeHostToken(std::string_view t);
// Syslog "Nov 22 10:15:32 host app[123]: " and ctime "Thu Jan 23 11:55:50 2025".
Strip StripSyslogOrCtime(std::string_view* s, ParsedLine* out);

// Kernel logs (wrappers_kernel.cc): journalctl's "host kernel: " after a time
// stamp; dmesg's "[ 9912.200001] ", "[  +0.000316] " and "[Fri Nov 22 10:15:31 2024] "
// (a bracketed form: `close` is the index of the ']'); a shipper's
// "host: kern: level: [time]: ".
void StripHostKernel(std::string_view* s, ParsedLine* out);
bool StripKernelStamp(std::string_view* s, size_t close, ParsedLine* out);
Strip StripKernFacility(std::string_view* s, ParsedLine* out);

}  // namespace ncclscan::wrappers_internal

#endif  // NCCLSCAN_PARSERS_WRAPPERS_INTERNAL_H_
