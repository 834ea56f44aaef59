// ParsedLine: one logical log line after unwrapping and header parsing. All
// string_views point into the input chunk or into the token's Arena.
//
// Thread-safety: plain value type.
#ifndef NCCLSCAN_PARSERS_PARSED_LINE_H_
#define NCCLSCAN_PARSERS_PARSED_LINE_H_

#include <cstdint>
#include <string_view>

namespace ncclscan {

// Which producer printed the line; rule patterns are scoped to one family.
enum class Family : uint8_t { kNccl = 0, kTorch = 1, kElastic = 2, kOther = 3 };
inline constexpr int kNumFamilies = 4;
const char* FamilyName(Family f);

// Ranks, local ranks and devices read from log text are below this: far above
// any job, and small enough that a parsed value always fits an int. A number
// at or above it is not a rank but a mangled line (it is never cast down:
// rank 4294967297 would wrap to rank 1).
inline constexpr int64_t kMaxRanks = int64_t{1} << 24;

enum class NcclLevel : uint8_t { kNone, kInfo, kWarn, kTrace, kCall, kAbort, kVersion };

struct ParsedLine {
  Family family = Family::kOther;
  std::string_view text;     // the line with every outer wrapper removed
  std::string_view message;  // nccl: after the NCCL header; torch: after the c10 header

  // What wrappers told.
  int rank_hint = -1;  // global rank: [rankN]:, MPI tag, srun label
  // The rank hint is an `srun --label` task number: a rank only when tasks are
  // ranks (with torchrun per node it is the node index; JobState decides).
  bool rank_hint_is_label = false;
  int label = -1;  // the srun label, also when [rankN] overrode it
  // An explicit [rankN] on this line contradicts its srun label: the file's
  // labels are task (node) numbers, not ranks.
  bool LabelIsNotRank() const { return label >= 0 && rank_hint >= 0 && !rank_hint_is_label && rank_hint != label; }
  int local_rank_hint = -1;    // torchrun [default3]:
  std::string_view host_hint;  // kubectl pod, pdsh host, ray ip
  std::string_view src_file;   // grep -H
  int64_t src_line = -1;       // grep -n
  double time = -1;            // seconds since Jan 1 (year unknown); -1 = none
  int16_t year = 0;            // the year its timestamp printed (ISO forms), 0 = none
  // A time stamp read from the line: the first one read (the outermost
  // wrapper's) is the line's time.
  void KeepTime(double t, int16_t y) {
    if (time < 0) {
      time = t;
      year = y;
    }
  }

  // NCCL header.
  NcclLevel level = NcclLevel::kNone;
  std::string_view host;
  int64_t pid = -1;
  int64_t tid = -1;
  int dev = -1;
  std::string_view src_loc;  // WARN file:line

  // c10 / glog header.
  char severity = 0;
  int pg_rank = -1;  // "[Rank N]" / "[PG … Rank N]": rank within the process group
  std::string_view pg_id;

  bool binary = false;   // mostly control bytes: counted, not matched
  bool had_nul = false;  // NUL bytes were dropped from the line
  // A rank, local rank or device number on the line did not fit (kMaxRanks):
  // it was dropped, not wrapped, and the line counts as malformed.
  bool bad_number = false;
};

}  // namespace ncclscan

#endif  // NCCLSCAN_PARSERS_PARSED_LINE_H_
