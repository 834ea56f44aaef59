// TraceReport: the diagnosis as a timeline (`--format trace`): Chrome trace
// event JSON ({"traceEvents": [...], "displayTimeUnit": "ms", "otherData":
// {...}}) that Perfetto UI and chrome://tracing open. One process per host,
// one thread per rank (named with "process_name" / "thread_name" metadata);
// collectives as complete ("X") slices — Flight Recorder entries (enqueue to
// completion; to the estimated dump time when they never completed: the first
// unfinished work's enqueue + timeout, when its watchdog fired) and watchdog timeout
// lines ("ran for N ms" printed at t: the slice [t - N ms, t]); every
// finding's evidence line as an instant ("i", thread scope) at its time; the
// primary finding's suspect ranks sorted first, named "rank 5 — suspected
// culprit (RULE)" and flagged with an instant.
//
// Time: log timestamps are seconds since Jan 1 of a year the logs do not say;
// Flight Recorder times are Unix epoch nanoseconds. Each is kept on its own
// clock; when both are present the dumps are shifted onto the log clock (see
// RenderTrace). The whole trace is then rebased so that ts 0 is the whole
// second at or before its earliest event: small numbers keep nanosecond
// nesting exact in viewers that parse ts as a double. otherData says what ts
// 0 is on each clock and how the two were aligned.
//
// Slices on one thread must nest; overlapping ones (collectives of several
// process groups in flight at once) go to extra "overlap" threads of the same
// rank, sorted right after it.
//
// Thread-safety: a pure function; output is byte-identical for the same
// JobState and Diagnosis (so whatever -j or argument order).
#ifndef NCCLSCAN_ENGINE_REPORTS_TRACE_REPORT_H_
#define NCCLSCAN_ENGINE_REPORTS_TRACE_REPORT_H_

#include <string>

#include "engine/models/diagnosis.h"
#include "engine/state/job_state.h"

namespace ncclscan {

inline constexpr const char* kTraceSchemaVersion = "ncclscan.trace/1";
// Entries drawn per dump (a ring buffer holds TORCH_NCCL_TRACE_BUFFER_SIZE,
// typically 2000): the newest are kept, the rest counted in otherData.
inline constexpr size_t kMaxTraceEntriesPerDump = 20000;

// Alignment of the two clocks when logs and dumps both carry times: the dump
// is written when the watchdog fires, so the estimated dump time is put at the
// earliest watchdog timeout line that has a time; without such a line
// the earliest dump entry is put at the earliest log event. Findings whose
// evidence has no time are placed at ts 0 with a note in their args.
std::string RenderTrace(const JobState& state, const Diagnosis& d);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_REPORTS_TRACE_REPORT_H_
