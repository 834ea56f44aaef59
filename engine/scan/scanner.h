// Scanner: the streaming, parallel part of the data flow.
//
//   read chunks (serial, in order) -> split + unwrap + classify + match (parallel)
//   -> apply matches to JobState (serial, in order)
//
// A oneTBB parallel_pipeline moves 128 KiB chunks (Options::chunk_size); a line
// cut by a chunk boundary is carried to the next chunk so every line is parsed
// exactly once. Memory is
// bounded by (live tokens x chunk size) plus JobState, never by input size: a
// line longer than max_line is cut there and counted, the rest skipped.
//
// Thread-safety: Scan() may be called once per Scanner; it runs the pipeline on
// up to `jobs` threads and writes JobState only from the serial stage.
#ifndef NCCLSCAN_ENGINE_SCAN_SCANNER_H_
#define NCCLSCAN_ENGINE_SCAN_SCANNER_H_

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/io/source.h"
#include "engine/state/job_state.h"
#include "rules/rule_set.h"

namespace ncclscan {

// Pipeline tokens (chunks being read, parsed or applied) at most, at any -j:
// 4 a thread up to 4 threads; past that each thread has fewer, and memory
// stays flat (bench/memory.sh measures -j1/-j2/-j16).
inline constexpr size_t kMaxChunksInFlight = 18;

struct ScanOptions {
  int jobs = 0;  // 0 = all cores
  // Bytes per pipeline token. Small enough that the chunks in flight stay in
  // cache between the read and the parse (128 KiB measured ~10% faster at -j2
  // than 1 MiB); results do not depend on it.
  size_t chunk_size = 1 << 17;
  size_t max_line = 1 << 20;
  // Fold runs of foldable matches (CompiledRule::foldable) in the parallel
  // stage; false applies every match line by line (the reference, for tests).
  bool fold = true;
  // -g globs: ExpandInputs applies them to walked files, the reader to the
  // members of archives.
  GlobFilter globs;
  // Progress for a terminal (cli): bytes read so far (decompressed), added to
  // as the input stage reads; and the size on disk of the inputs, set by
  // Analyze once they are known. Null: not counted. Results never depend on it.
  std::atomic<uint64_t>* progress_bytes = nullptr;
  std::atomic<uint64_t>* progress_total = nullptr;
  // Called with each chunk's text (decoded, whole lines) from the parallel
  // stage, on several threads at once and in no order: a reader of the raw
  // text (redact's Learn) rides on the scan's read. Results never depend on it.
  std::function<void(std::string_view)> on_text;
};

// progress_total before Analyze has measured the inputs.
inline constexpr uint64_t kProgressTotalUnknown = ~uint64_t{0};

class Scanner {
 public:
  Scanner(const RuleSet* rules, ScanOptions opts) : rules_(rules), opts_(opts) {}

  // Scans every input ("-" = stdin) into *state, in the given order; a tar
  // archive's members are files of their own ("job.tar.gz:rank3.log"), added
  // to *state as they are met. A file that cannot be read (or stops being
  // readable) is reported through on_error and recorded on its FileInfo; the
  // others are still scanned. What hygiene skips is counted in state->skipped().
  // An input whose head is a pickle or a Flight Recorder dump (parsers/
  // flight_recorder.h) is read whole by the input stage instead of as lines:
  // a file with 0 lines, its dump added to state->flight_recorders() after
  // the pipeline (in input order), a parse failure its FileInfo::error.
  void Scan(const std::vector<InputPath>& inputs, JobState* state,
            const std::function<void(const std::string&)>& on_error);
  // The same for paths named by the user (always read).
  void Scan(const std::vector<std::string>& paths, JobState* state,
            const std::function<void(const std::string&)>& on_error);

 private:
  const RuleSet* rules_;
  ScanOptions opts_;
};

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_SCAN_SCANNER_H_
