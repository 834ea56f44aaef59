// JobState's subject registry (engine/state/job_state.h): which subject — a
// rank, a process (host:pid), a stream of a file — a line belongs to, the
// subjects created on the way, and the notes the scanner makes for lines no
// rule reads (a process's NCCL header, a rank's last line).
#include <algorithm>

#include "engine/state/job_state.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

// The key of the subject past kMaxSubjects (process keys start "P ", ranks
// "R ", streams "F ").
constexpr const char* kOverCapKey = "O";

std::string ProcessKey(std::string_view host, int64_t pid) {
  std::string k = "P ";
  k.append(host.data(), host.size());
  k += ":" + std::to_string(pid);
  return k;
}

}  // namespace

int JobState::ProcessSubject(std::string_view host, int64_t pid) {
  // Consecutive lines nearly always come from the same process: skip the map.
  if (last_process_ >= 0 && subjects_[last_process_].pid == pid && subjects_[last_process_].host == host) {
    return last_process_;
  }
  std::string key = ProcessKey(host, pid);
  auto it = subject_index_.find(key);
  if (it != subject_index_.end()) return last_process_ = it->second;
  Subject s;
  s.host = std::string(host);
  s.pid = pid;
  int idx = NewSubject(std::move(key), std::move(s));
  return subjects_[idx].pid == pid ? last_process_ = idx : idx;
}

int JobState::RankSubject(int rank) {
  std::string key = "R " + std::to_string(rank);
  auto it = subject_index_.find(key);
  if (it != subject_index_.end()) return it->second;
  Subject s;
  s.rank = rank;
  return NewSubject(std::move(key), std::move(s));
}

int JobState::NewSubject(std::string key, Subject s) {
  if (subjects_.size() >= kMaxSubjects) {
    counters_.over_subject_cap++;
    auto it = subject_index_.find(kOverCapKey);
    if (it != subject_index_.end()) return it->second;
    // Neither a process nor a rank: its first/last facts keep every value, as
    // for a stream several processes share.
    s = Subject();
    s.label = "(more processes and ranks than the subject cap)";
    s.over_cap = true;
    key = kOverCapKey;
  }
  s.facts = FactSlots<FactValue>(rules_->facts().size());
  s.keyed = KeyedSlots(rules_->facts().size());
  subjects_.push_back(std::move(s));
  int idx = static_cast<int>(subjects_.size()) - 1;
  subject_index_.emplace(std::move(key), idx);
  return idx;
}

void JobState::NoteProcess(int file, std::string_view host, int64_t pid) {
  int s = ProcessSubject(host, pid);
  Subject& sub = subjects_[s];
  if (sub.over_cap) return;
  if (sub.files.empty() || sub.files.back() != file) {
    if (std::find(sub.files.begin(), sub.files.end(), file) == sub.files.end()) sub.files.push_back(file);
  }
  if (files_[file].path_rank >= 0) sub.rank_hints[files_[file].path_rank]++;
}

void JobState::NoteRankLine(int file, int64_t line_no, const ParsedLine& line) {
  const int fact = rules_->fact(Fact::kLastLine);
  if (fact < 0) return;
  const int si = SubjectFor(file, line, -1, /*previous=*/false);
  EvidenceRef ev{file, line_no, line.text, line.time};
  ev.origin_file = line.src_file;
  ev.origin_line = line.src_line;
  SetFact(si, fact, "", CutUtf8(line.text, kMaxLastLineValue), 1, ev);
}

int JobState::SubjectFor(int file, const ParsedLine& line, int capture_rank, bool previous, int64_t weight) {
  if (capture_rank >= 0) {
    int s = RankSubject(capture_rank);
    previous_subject_[file] = s;
    return s;
  }
  if (previous && previous_subject_[file] >= 0) return previous_subject_[file];
  const FileInfo& f = files_[file];
  if (!line.host.empty() && line.pid >= 0) {
    int s = ProcessSubject(line.host, line.pid);
    Subject& sub = subjects_[s];
    if (sub.over_cap) return s;  // its votes would name a rank it is not
    if (!line.host_hint.empty() && line.host_hint != line.host) {
      auto h = hint_hosts_.find(line.host_hint);
      if (h == hint_hosts_.end()) h = hint_hosts_.try_emplace(std::string(line.host_hint)).first;
      h->second[sub.host] += weight;
    }
    if (line.rank_hint >= 0) (line.rank_hint_is_label ? sub.label_hints : sub.rank_hints)[line.rank_hint] += weight;
    if (line.dev >= 0 && line.dev < 64) sub.devices |= uint64_t{1} << line.dev;
    if (f.path_rank >= 0) sub.rank_hints[f.path_rank] += weight;
    if (std::find(sub.files.begin(), sub.files.end(), file) == sub.files.end()) sub.files.push_back(file);
    return s;
  }
  int rank = line.rank_hint;
  if (line.rank_hint_is_label && labels_not_ranks_.count(file)) rank = -1;
  if (rank < 0) rank = f.path_rank;
  if (rank < 0 && line.family == Family::kTorch && line.pg_rank >= 0 && (line.pg_id.empty() || line.pg_id == "0")) {
    rank = line.pg_rank;
  }
  if (rank >= 0) {
    int s = RankSubject(rank);
    Subject& sub = subjects_[s];
    if (std::find(sub.files.begin(), sub.files.end(), file) == sub.files.end()) sub.files.push_back(file);
    if (sub.host.empty() && !line.host_hint.empty() && !sub.over_cap) {
      sub.host = std::string(line.host_hint);
      sub.host_from_hint = true;
    }
    return s;
  }
  if (!f.path_host.empty() && f.path_pid >= 0) return ProcessSubject(f.path_host, f.path_pid);
  // One per wrapper label: a kubectl dump interleaves the unprefixed lines of several pods.
  std::string key = "F " + std::to_string(file);
  if (!line.host_hint.empty()) key.append(" ").append(line.host_hint);
  auto it = subject_index_.find(key);
  if (it != subject_index_.end()) return it->second;
  Subject s;
  s.label = f.path;
  s.files.push_back(file);
  if (!line.host_hint.empty()) {
    s.host = std::string(line.host_hint);
    s.host_from_hint = true;
  }
  return NewSubject(std::move(key), std::move(s));
}

}  // namespace ncclscan
