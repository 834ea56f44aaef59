// JobState's subject registry (engine/state/job_state.h): which subject — a
// rank, a process (host:pid), a stream of a file — a line belongs to, the
// subjects created on the way, and the notes the scanner makes for lines no
// rule reads (a process's NCCL header, a rank's last line).
#include <algorithm>

#include "engine/state/job_state.h"
#include "parsers/text_util.h"

namespace ncclscan {

int JobState::ProcessSubject(std::string_view host, int64_t pid) {
  const size_t slot = SpreadBits(static_cast<uint64_t>(pid)) >> 52;  // one of kProcessCacheSlots
  const int cached = process_cache_[slot];
  if (cached >= 0 && subjects_.all[cached].pid == pid && subjects_.all[cached].host == host) return cached;
  const SubjectKeyView key = SubjectKey::Process(host, pid);
  int idx = subjects_.Find(key);
  if (idx < 0) {
    Subject s;
    s.host = std::string(host);
    s.pid = pid;
    idx = NewSubject(key, std::move(s));
  }
  if (subjects_.all[idx].pid == pid) process_cache_[slot] = idx;  // not the subject past the cap
  return idx;
}

int JobState::RankSubject(int rank) {
  const SubjectKeyView key = SubjectKey::Rank(rank);
  const int found = subjects_.Find(key);
  if (found >= 0) return found;
  Subject s;
  s.rank = rank;
  return NewSubject(key, std::move(s));
}

void JobState::NoteProcess(int file, std::string_view host, int64_t pid) {
  int s = ProcessSubject(host, pid);
  Subject& sub = subjects_.all[s];
  if (sub.over_cap) return;
  sub.AddFile(file);
  if (inputs_.files[file].path_rank >= 0) sub.rank_hints[inputs_.files[file].path_rank]++;
}

void JobState::TouchRank(int file, int rank, bool is_label) {
  if (is_label && inputs_.labels_not_ranks.count(file)) return;  // SubjectFor reads no rank there
  RankSubject(rank);
}

void JobState::NoteRankLine(int file, int64_t line_no, const ParsedLine& line) {
  const int fact = rules_->fact(Fact::kLastLine);
  if (fact < 0) return;
  int si = SubjectFor(file, line, -1, /*previous=*/false, /*weight=*/0);
  if (rank_line_votes_.size() <= static_cast<size_t>(file)) rank_line_votes_.resize(file + 1);
  const uint64_t vote =
      static_cast<uint64_t>(si) << 20 | static_cast<uint64_t>(line.rank_hint) << 1 | (line.rank_hint_is_label ? 1 : 0);
  if (rank_line_votes_[file].insert(vote).second) {
    si = SubjectFor(file, line, -1, /*previous=*/false);
  }
  SetFact(si, fact, "", CutUtf8(line.text, kMaxLastLineValue), 1, EvidenceRef::Of(file, line_no, line));
}

int JobState::SubjectFor(int file, const ParsedLine& line, int capture_rank, bool previous, int64_t weight) {
  if (capture_rank >= 0) {
    int s = RankSubject(capture_rank);
    previous_subject_[file] = s;
    return s;
  }
  if (previous && previous_subject_[file] >= 0) return previous_subject_[file];
  const FileInfo& f = inputs_.files[file];
  if (!line.host.empty() && line.pid >= 0) {
    int s = ProcessSubject(line.host, line.pid);
    Subject& sub = subjects_.all[s];
    if (sub.over_cap) return s;  // its votes would name a rank it is not
    if (!line.host_hint.empty() && line.host_hint != line.host) {
      auto h = identity_.hint_hosts.find(line.host_hint);
      if (h == identity_.hint_hosts.end()) h = identity_.hint_hosts.try_emplace(std::string(line.host_hint)).first;
      h->second[sub.host] += weight;
    }
    if (line.rank_hint >= 0) (line.rank_hint_is_label ? sub.label_hints : sub.rank_hints)[line.rank_hint] += weight;
    if (line.dev >= 0 && line.dev < 64) sub.devices |= uint64_t{1} << line.dev;
    if (f.path_rank >= 0) sub.rank_hints[f.path_rank] += weight;
    sub.AddFile(file);
    return s;
  }
  int rank = line.rank_hint;
  if (line.rank_hint_is_label && inputs_.labels_not_ranks.count(file)) rank = -1;
  if (rank < 0) rank = f.path_rank;
  if (rank < 0 && line.family == Family::kTorch && line.pg_rank >= 0 && (line.pg_id.empty() || line.pg_id == "0")) {
    rank = line.pg_rank;
  }
  if (rank >= 0) {
    int s = RankSubject(rank);
    Subject& sub = subjects_.all[s];
    sub.AddFile(file);
    if (sub.host.empty() && !line.host_hint.empty() && !sub.over_cap) {
      sub.host = std::string(line.host_hint);
      sub.host_from_hint = true;
    }
    return s;
  }
  if (!f.path_host.empty() && f.path_pid >= 0) return ProcessSubject(f.path_host, f.path_pid);
  // One per wrapper label: a kubectl dump interleaves the unprefixed lines of several pods.
  const SubjectKeyView key = SubjectKey::Stream(file, line.host_hint);
  const int found = subjects_.Find(key);
  if (found >= 0) {
    subjects_.all[found].names_another |= line.bad_number;
    return found;
  }
  Subject s;
  s.names_another = line.bad_number;
  s.label = f.path;
  s.files.push_back(file);
  if (!line.host_hint.empty()) {
    s.host = std::string(line.host_hint);
    s.host_from_hint = true;
  } else if (!f.path_host.empty() && f.path_pid < 0) {  // node-7.dmesg.log
    s.host = f.path_host;
    s.host_from_hint = true;
  }
  return NewSubject(key, std::move(s));
}

}  // namespace ncclscan
