// Reports: the same diagnosis as a versioned JSON document (for bots, schema in
// docs/diagnosis.schema.json), a coloured terminal report (for people), and
// markdown (for tickets). Output is a pure function of JobState + Diagnosis, so
// it is byte-identical whatever the thread count or argument order.
//
// Thread-safety: pure functions.
#ifndef NCCLSCAN_ENGINE_REPORT_H_
#define NCCLSCAN_ENGINE_REPORT_H_

#include <string>

#include "engine/diagnosis.h"
#include "engine/job_state.h"

namespace ncclscan {

inline constexpr const char* kSchemaVersion = "ncclscan.diagnosis/1";
const char* ToolVersion();

struct ReportOptions {
  bool color = false;
  bool verbose = false;  // text: also list info findings in full
};

std::string RenderJson(const JobState& state, const Diagnosis& d);
std::string RenderText(const JobState& state, const Diagnosis& d, const ReportOptions& opts);
std::string RenderMarkdown(const JobState& state, const Diagnosis& d);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_REPORT_H_
