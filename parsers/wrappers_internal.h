// The pieces of parsers/wrappers.cc that its kernel-log and platform parts
// (wrappers_kernel.cc, wrappers_platform.cc) share. Not for use outside parsers/.
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
// Does `s` start like an inner header we know (so a preceding "x: " is a wrapper)?
bool StartsLikeHeader(std::string_view s);
// Syslog "Nov 22 10:15:32 host app[123]: " and ctime "Thu Jan 23 11:55:50 2025".
Strip StripSyslogOrCtime(std::string_view* s, ParsedLine* out);

// Kernel logs (wrappers_kernel.cc): journalctl's "host kernel: " after a time
// stamp; dmesg's "[ 9912.200001] ", "[  +0.000316] " and "[Fri Nov 22 10:15:31 2024] "
// (a bracketed form: `close` is the index of the ']'); a shipper's
// "host: kern: level: [time]: ".
void StripHostKernel(std::string_view* s, ParsedLine* out);
bool StripKernelStamp(std::string_view* s, size_t close, ParsedLine* out);
Strip StripKernFacility(std::string_view* s, ParsedLine* out);

// Log platforms and exporters (wrappers_platform.cc): "2024-11-22T10:15:31.123Z "
// and CRI's "… stdout F "; Google Cloud Logging's "ERROR 2025-04-05T00:01:19.5Z ";
// a bracketed "[2024-02-27T21:35:28.705869Z] " (a bracketed form: `close` is the
// index of the ']'); Determined's "fa88a9df [rank=2] || ".
Strip StripIsoTimestamp(std::string_view* s, ParsedLine* out);
Strip StripSeverityTimestamp(std::string_view* s, ParsedLine* out);
bool StripBracketedIsoTime(std::string_view* s, size_t close, ParsedLine* out);
Strip StripDeterminedId(std::string_view* s, ParsedLine* out);
// Ray's "(RayWorkerWrapper pid=270291, ip=10.1.2.3) ", vLLM's "(VllmWorker rank=2 pid=55723) ".
Strip StripRayPrefix(std::string_view* s, ParsedLine* out);

// grep (wrappers_grep.cc): -H / -n "path:", "path:123:", "123:" before a known
// header, and context lines "path-123-".
Strip StripGrepPrefix(std::string_view* s, ParsedLine* out);

}  // namespace ncclscan::wrappers_internal

#endif  // NCCLSCAN_PARSERS_WRAPPERS_INTERNAL_H_
