// JobState::Absorb: one state takes in the state of files scanned after its
// own, as if the scan had gone on into them. `ncclscan merge` folds partial
// states with it, in path order, so the result is the state one scan over all
// the files would have built (engine/run/partial.h says where that stops holding).
#include <algorithm>
#include <cstdlib>

#include "engine/state/job_state.h"

namespace ncclscan {

namespace {

// `later` values of one fact, set on lines after those of `into`: the merge
// SetFact would have made line by line (first and set keep the earlier
// evidence, last takes the later, max/min the strictly greater/smaller).
void MergeLater(const FactSpec& spec, FactValue* into, FactValue&& later) {
  into->count += later.count;
  for (const auto& v : later.values) InsertSetValue(&into->values, v);
  if (spec.merge == MergeMode::kCount) {
    into->value = std::to_string(into->count);
  } else if (MergeReplaces(spec, later.value, into->value)) {
    into->value = std::move(later.value);
    into->evidence = std::move(later.evidence);
    into->seen = later.seen;
  }
}

template <typename Map>
void AddCounts(Map* into, const Map& from) {
  for (const auto& kv : from) (*into)[kv.first] += kv.second;
}

}  // namespace

void JobState::Absorb(JobState&& b) {
  const int file_off = static_cast<int>(files_.size());
  for (auto& f : b.files_) {
    files_.push_back(std::move(f));
    previous_subject_.push_back(-1);
  }
  skipped_.Merge(b.skipped_);

  // Grep-prefix origins are interned as Cite does, up to the same bound.
  std::vector<int> origin_map(b.origins_.size(), -1);
  for (size_t i = 0; i < b.origins_.size(); ++i) origin_map[i] = InternOrigin(b.origins_[i]);
  auto fix_seen = [&](Seen* s) {
    if (s->file >= 0) s->file += file_off;
  };
  auto fix_evidence = [&](Evidence* e) {
    if (e->file >= 0) e->file += file_off;
    if (e->origin >= 0) {
      e->origin = origin_map[e->origin];
      if (e->origin < 0) e->origin_line = 0;
    }
  };
  auto fix_value = [&](FactValue* v) {
    fix_evidence(&v->evidence);
    fix_seen(&v->seen);
  };

  // Subjects meet by key: the same process, rank or (per file) stream.
  std::vector<std::string> key_of(b.subjects_.size());
  for (const auto& kv : b.subject_index_) key_of[kv.second] = kv.first;
  std::vector<int> smap(b.subjects_.size(), -1);
  for (size_t i = 0; i < b.subjects_.size(); ++i) {
    Subject& bs = b.subjects_[i];
    std::string key = std::move(key_of[i]);
    if (key.size() > 2 && key[0] == 'F') {  // "F <file>[ <wrapper label>]"
      char* end = nullptr;
      long f = std::strtol(key.c_str() + 2, &end, 10);
      key = "F " + std::to_string(f + file_off) + std::string(end);
    }
    for (int& f : bs.files) f += file_off;
    for (auto& [f, v] : bs.facts.slots()) fix_value(&v);
    for (auto& [f, m] : bs.keyed.slots()) {
      for (auto& kv : m) fix_value(&kv.second);
    }
    auto it = subject_index_.find(key);
    int j;
    if (it != subject_index_.end()) {
      j = it->second;
    } else if (subjects_.size() < kMaxSubjects) {
      subjects_.push_back(std::move(bs));
      smap[i] = static_cast<int>(subjects_.size()) - 1;
      subject_index_.emplace(std::move(key), smap[i]);
      continue;
    } else {
      // Past the cap a scan would have summarised this subject's lines; its
      // state joins the summary (counted once, not per line: a merge past the
      // cap summarises as a scan does, but its count is of subjects).
      j = NewSubject(std::move(key), Subject());
    }
    smap[i] = j;
    Subject& a = subjects_[j];
    if (a.host.empty() && !bs.host.empty() && !a.over_cap) {
      a.host = bs.host;
      a.host_from_hint = bs.host_from_hint;
    }
    for (int f : bs.files) {
      if (std::find(a.files.begin(), a.files.end(), f) == a.files.end()) a.files.push_back(f);
    }
    a.devices |= bs.devices;
    if (!a.over_cap) {
      AddCounts(&a.rank_hints, bs.rank_hints);
      AddCounts(&a.label_hints, bs.label_hints);
    }
    for (auto& [f, v] : bs.facts.slots()) {
      if (FactValue* mine = a.facts.Find(f)) {
        MergeLater(rules_->facts()[f], mine, std::move(v));
      } else {
        a.facts.At(f) = std::move(v);
      }
    }
    for (auto& [f, later] : bs.keyed.slots()) {
      KeyedValues& m = a.keyed.At(f);
      for (auto& kv : later) {
        auto k = m.find(kv.first);
        if (k != m.end()) {
          MergeLater(rules_->facts()[f], &k->second, std::move(kv.second));
        } else if (rules_->facts()[f].window <= 0 && m.size() >= kMaxKeysPerFact) {
          counters_.over_key_cap++;
        } else {
          TrimWindow(rules_->facts()[f], &m);
          m.emplace(kv.first, std::move(kv.second));
        }
      }
    }
  }
  auto sub = [&](int i) { return i >= 0 && static_cast<size_t>(i) < smap.size() ? smap[i] : i; };

  // Per-subject identity: later assignments win, as they would line by line;
  // the first bootstrap address and the first global rank stay.
  for (size_t i = 0; i < b.comm_ptr_.size(); ++i) {
    if (b.comm_ptr_[i].empty()) continue;
    const size_t j = static_cast<size_t>(sub(static_cast<int>(i)));
    if (comm_ptr_.size() <= j) comm_ptr_.resize(j + 1);
    for (auto& kv : b.comm_ptr_[i]) comm_ptr_[j][kv.first] = std::move(kv.second);
  }
  for (auto& kv : b.comm_rank_) {
    auto& m = comm_rank_[sub(kv.first)];
    for (auto& cr : kv.second) {
      if (CanTrackComm(cr.first)) m[cr.first] = cr.second;
    }
  }
  for (const auto& kv : b.subject_global_rank_) {
    const int j = sub(kv.first);
    auto it = subject_global_rank_.find(j);
    if (it == subject_global_rank_.end()) {
      subject_global_rank_[j] = kv.second;
    } else if (it->second != kv.second) {
      NoteConflict(subjects_[j].host + ":" + std::to_string(subjects_[j].pid) + " is named rank " +
                   std::to_string(it->second) + " and rank " + std::to_string(kv.second) +
                   " (one process driving several GPUs?); using " + std::to_string(it->second));
    }
  }
  for (size_t i = 0; i < b.subject_address_.size(); ++i) {
    if (b.subject_address_[i].empty()) continue;
    const size_t j = static_cast<size_t>(sub(static_cast<int>(i)));
    if (subject_address_.size() <= j) subject_address_.resize(j + 1);
    if (subject_address_[j].empty()) subject_address_[j] = std::move(b.subject_address_[i]);
  }
  for (size_t i = 0; i < b.open_warn_.size(); ++i) {
    if (b.open_warn_[i].empty()) continue;
    const size_t j = static_cast<size_t>(sub(static_cast<int>(i)));
    if (open_warn_.size() <= j) open_warn_.resize(j + 1);
    open_warn_[j] = std::move(b.open_warn_[i]);
  }
  for (auto& kv : b.hint_hosts_) {
    auto h = hint_hosts_.find(kv.first);
    if (h == hint_hosts_.end()) h = hint_hosts_.try_emplace(kv.first).first;
    AddCounts(&h->second, kv.second);
  }
  for (auto& kv : b.address_owner_) address_owner_[kv.first] = std::move(kv.second);

  for (auto& kv : b.comms_) {
    CommInfo* mine = CommFor(kv.first);
    if (!mine) continue;  // past the cap, as its lines would have been
    CommInfo& ci = *mine;
    if (kv.second.nranks > 0) ci.nranks = kv.second.nranks;
    ci.ranks_started.insert(kv.second.ranks_started.begin(), kv.second.ranks_started.end());
    ci.ranks_completed.insert(kv.second.ranks_completed.begin(), kv.second.ranks_completed.end());
    ci.ranks_aborted.insert(kv.second.ranks_aborted.begin(), kv.second.ranks_aborted.end());
    for (int s : kv.second.subjects) ci.subjects.insert(sub(s));
  }

  for (auto& kv : b.line_findings_) {
    LineFindingAcc& bf = kv.second;
    for (auto& e : bf.evidence) fix_evidence(&e);
    fix_seen(&bf.first);
    fix_seen(&bf.last);
    std::set<int> subjects;
    for (int s : bf.subjects) subjects.insert(sub(s));
    bf.subjects = std::move(subjects);
    auto it = line_findings_.find(kv.first);
    if (it == line_findings_.end()) {
      line_findings_.emplace(kv.first, std::move(bf));
      continue;
    }
    LineFindingAcc& a = it->second;
    a.count += bf.count;
    a.subjects.insert(bf.subjects.begin(), bf.subjects.end());
    for (auto& e : bf.evidence) {
      if (a.evidence.size() >= kMaxEvidencePerFinding) break;
      a.evidence.push_back(std::move(e));
    }
    if (SeenBefore(bf.first, a.first)) a.first = bf.first;
    if (SeenBefore(a.last, bf.last)) a.last = bf.last;
    if (a.result.empty()) a.result = std::move(bf.result);
  }

  for (auto& fr : b.flight_recorders_) AddFlightRecorder(std::move(fr));
  for (int f : b.labels_not_ranks_) labels_not_ranks_.insert(f + file_off);
  for (const auto& c : b.identity_conflicts_) NoteConflict(c);

  counters_.Add(b.counters_);
  last_process_ = -1;
}

}  // namespace ncclscan
