// PathHints: what a log file's path says about who wrote it.
//   rank3.log, rank_3.txt, rank-3.out       -> global rank 3
//   …/attempt_0/3/stderr.log                -> torchrun local rank 3, restart attempt 0
//   nccl.gpu-a17.48213 (NCCL_DEBUG_FILE)    -> host gpu-a17, pid 48213
//
// Thread-safety: pure function.
#ifndef NCCLSCAN_PARSERS_PATH_HINTS_H_
#define NCCLSCAN_PARSERS_PATH_HINTS_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace ncclscan {

struct PathHints {
  int rank = -1;
  int local_rank = -1;
  int attempt = -1;
  std::string host;
  int64_t pid = -1;
};

PathHints ParsePathHints(std::string_view path);

}  // namespace ncclscan

#endif  // NCCLSCAN_PARSERS_PATH_HINTS_H_
