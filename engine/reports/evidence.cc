// EvidenceOwners, WriteEvidence and WriteTime (engine/reports/report_internal.h):
// whose line a piece of evidence is, and how its time is written.
#include <fmt/format.h>

#include "engine/reports/report_internal.h"

namespace ncclscan {

EvidenceOwners::EvidenceOwners(const JobState& st) : st_(st) {
  for (int s : st.LiveSubjects()) {
    const Subject& sub = st.subjects()[s];
    if (sub.rank < 0) continue;
    by_rank_.emplace(sub.rank, s);
    for (int f : sub.files) {
      auto [it, fresh] = only_one_in_file_.emplace(f, s);
      if (!fresh && it->second != s) it->second = -1;
    }
  }
}

int EvidenceOwners::Of(const Evidence& e) const {
  if (e.subject >= 0) return st_.LiveSubject(e.subject);
  if (e.rank >= 0) {
    auto it = by_rank_.find(e.rank);
    return it == by_rank_.end() ? -1 : it->second;
  }
  auto it = only_one_in_file_.find(e.file);
  return it == only_one_in_file_.end() ? -1 : it->second;
}

int EvidenceOwners::Rank(const Evidence& e) const {
  const int s = Of(e);
  if (s >= 0 && st_.subjects()[s].rank >= 0) return st_.subjects()[s].rank;
  if (e.rank >= 0) return e.rank;
  return e.file >= 0 ? st_.files()[e.file].path_rank : -1;
}

std::string EvidenceOwners::Host(const Evidence& e) const {
  const int s = Of(e);
  if (s >= 0 && !st_.subjects()[s].host.empty()) return st_.subjects()[s].host;
  return e.file >= 0 ? st_.files()[e.file].path_host : std::string();
}

void WriteTime(Json* j, const JobState& st, double t) {
  if (t < 0)
    j->Null();
  else
    j->String(FormatTime(t, st.counters().Year()));
}

void WriteEvidence(Json* j, const JobState& st, const EvidenceOwners& owners, const std::vector<Evidence>& ev) {
  j->BeginArray();
  for (const auto& e : ev) {
    j->BeginObject();
    j->KV("file", st.CitedPath(e));  // a grep -H -n prefix's file and line when there was one
    j->KVInt("line", st.CitedLine(e));
    j->KV("text", e.text);
    const int rank = owners.Rank(e);
    j->Key("rank");
    if (rank >= 0)
      j->Int(rank);
    else
      j->Null();
    const std::string host = owners.Host(e);
    j->Key("host");
    if (host.empty())
      j->Null();
    else
      j->String(host);
    j->Key("time");
    WriteTime(j, st, e.time);
    j->EndObject();
  }
  j->EndArray();
}

}  // namespace ncclscan
