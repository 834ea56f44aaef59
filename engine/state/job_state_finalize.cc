// JobState::Finalize: identity resolution once every line is in. Host names
// from wrapper labels and bootstrap addresses, each process's global rank,
// the merge of the subjects of one rank, pointer communicators folded into
// their commId, and the labels the reports print.
#include <algorithm>
#include <map>
#include <set>

#include "engine/state/job_state.h"
#include "parsers/pci_address.h"
#include "parsers/text_util.h"

namespace ncclscan {

void JobState::Finalize() {
  finalized_ = false;
  ResolvePointerComms();
  ResolveHosts();
  JoinKernelSubjects();
  ResolveRanks();
  const std::vector<bool> duplicate = MergeSubjectsOfOneRank();
  MergeOneProcessStreams();
  JoinUnnamedComms();
  Relabel(duplicate);
  live_after_finalize_ = LiveSubjects();
  finalized_ = true;
}

void JobState::ResolveHosts() {
  // A wrapper's label (kubectl pod) that only ever prefixed the lines of processes printing
  // one host name is that host: its unprefixed lines (PyTorch, torchrun) belong there too.
  for (auto& sub : subjects_.all) {
    if (!sub.host_from_hint) continue;
    auto h = identity_.hint_hosts.find(sub.host);
    if (h != identity_.hint_hosts.end() && h->second.size() == 1) {
      sub.host = h->second.begin()->first;
      sub.host_from_hint = false;
    }
  }
  // 0. Two machines can share a host name (default images: "ubuntu"); when the
  // processes of one name bootstrap from different addresses, keep them apart.
  std::map<std::string, std::set<std::string>> addrs_of_host;
  for (size_t i = 0; i < subjects_.all.size() && i < identity_.address.size(); ++i) {
    if (!identity_.address[i].empty() && !subjects_.all[i].host.empty()) {
      addrs_of_host[subjects_.all[i].host].insert(identity_.address[i]);
    }
  }
  for (size_t i = 0; i < subjects_.all.size() && i < identity_.address.size(); ++i) {
    Subject& s = subjects_.all[i];
    if (!identity_.address[i].empty() && addrs_of_host[s.host].size() > 1) {
      s.host += "[" + identity_.address[i] + "]";
    }
  }
  for (auto& kv : identity_.address_owner) {
    if (addrs_of_host[kv.second].size() > 1) kv.second += "[" + kv.first + "]";
  }
}

void JobState::JoinKernelSubjects() {
  // A process of the job: a communicator member, or one a rank was hinted for.
  auto in_job = [&](int i) {
    const Subject& s = subjects_.all[i];
    return !s.merged_away && s.pid >= 0 && !s.over_cap &&
           (comms_.rank_in.count(i) || identity_.global_rank.count(i) || !s.rank_hints.empty() ||
            !s.label_hints.empty());
  };
  const int n = static_cast<int>(subjects_.all.size());
  // 1. A kernel line without a host names a pid: the one process of that pid.
  std::multimap<int64_t, int> by_pid;
  for (int i = 0; i < n; ++i) {
    const Subject& s = subjects_.all[i];
    if (!s.merged_away && s.pid >= 0 && !s.host.empty()) by_pid.emplace(s.pid, i);
  }
  for (int i = 0; i < n; ++i) {
    const Subject& s = subjects_.all[i];
    if (s.merged_away || s.pid < 0 || !s.host.empty() || in_job(i) || by_pid.count(s.pid) != 1) continue;
    subjects_.Merge(i, by_pid.find(s.pid)->second, rules_->facts(), &counters_.over_key_cap);
  }
  // 2. A pid torchrun's failure table gave a rank's worker ("exitcode : -9 (pid: 4242)").
  const int worker_pid = rules_->fact(Fact::kWorkerPid);
  if (worker_pid >= 0) {
    std::multimap<int64_t, int> by_worker;
    for (int j = 0; j < n; ++j) {
      const FactValue* v = subjects_.all[j].merged_away ? nullptr : subjects_.all[j].Get(worker_pid);
      int64_t p;
      if (v && ParseInt(v->value, &p)) by_worker.emplace(p, j);
    }
    for (int i = 0; i < n; ++i) {
      const Subject& s = subjects_.all[i];
      if (s.merged_away || s.pid < 0 || in_job(i) || by_worker.count(s.pid) != 1) continue;
      const int into = by_worker.find(s.pid)->second;
      if (into == i || !(s.host.empty() || subjects_.all[into].host.empty() || subjects_.all[into].host == s.host))
        continue;
      // A rank known by its number keeps being one: the pid is the kernel's view of it.
      const int64_t keep = subjects_.all[into].pid;
      subjects_.Merge(i, into, rules_->facts(), &counters_.over_key_cap);
      subjects_.all[into].pid = keep;
    }
  }
  // 3. A GPU (a device subject, or a process no NCCL line of the job is from: a
  // host pid of a containerised job) joins the process whose communicator
  // init printed its busId, on its host (any host when the kernel line named none).
  const int bus_fact = rules_->fact(Fact::kGpuBus);
  if (bus_fact < 0) return;
  auto bus_of = [&](int i) {
    const FactValue* v = subjects_.all[i].Get(bus_fact);
    return v ? PciBusNumber(v->value) : int64_t{-1};
  };
  std::set<int> devices;
  for (const auto& [key, i] : subjects_.index) {
    if (key.kind == SubjectKind::kDevice) devices.insert(i);
  }
  std::multimap<int64_t, int> by_bus;
  for (int j = 0; j < n; ++j) {
    if (in_job(j) && bus_of(j) >= 0) by_bus.emplace(bus_of(j), j);
  }
  for (int i = 0; i < n; ++i) {
    const Subject& k = subjects_.all[i];
    if (k.merged_away || !(devices.count(i) || (k.pid >= 0 && !in_job(i)))) continue;
    int match = -1, matches = 0;
    for (auto [it, end] = by_bus.equal_range(bus_of(i)); it != end; ++it) {
      if (!k.host.empty() && subjects_.all[it->second].host != k.host) continue;
      match = it->second;
      ++matches;
    }
    if (matches == 1) subjects_.Merge(i, match, rules_->facts(), &counters_.over_key_cap);
  }
}

void JobState::ResolveRanks() {
  for (size_t i = 0; i < subjects_.all.size(); ++i) {
    Subject& s = subjects_.all[i];
    if ((s.rank >= 0 && s.pid < 0) || s.over_cap) continue;  // a rank subject, or the summary past the cap
    int rank = -1;
    std::string source;
    auto g = identity_.global_rank.find(static_cast<int>(i));
    if (g != identity_.global_rank.end()) {
      rank = g->second;
      source = "ProcessGroupNCCL global rank";
    } else {
      auto cr = comms_.rank_in.find(static_cast<int>(i));
      if (cr != comms_.rank_in.end()) {
        int best_n = -1;
        for (const auto& kv : cr->second) {
          auto c = comms_.by_id.find(kv.first);
          int n = c == comms_.by_id.end() ? 0 : c->second.nranks;
          if (n > best_n) {
            best_n = n;
            rank = kv.second;
          }
        }
        source = "communicator init";
      }
    }
    // srun labels count as rank hints unless a file of this subject showed
    // that its labels are not ranks.
    bool labels_are_ranks = true;
    for (int f : s.files) labels_are_ranks &= !inputs_.labels_not_ranks.count(f);
    if (labels_are_ranks) {
      for (const auto& kv : s.label_hints) s.rank_hints[kv.first] += kv.second;
    }
    int hint = -1, hint_n = 0;
    for (const auto& kv : s.rank_hints) {
      if (kv.second > hint_n) {
        hint = kv.first;
        hint_n = kv.second;
      }
    }
    if (rank >= 0 && hint >= 0 && hint != rank) {
      identity_.NoteConflict(s.host + ":" + std::to_string(s.pid) + " is rank " + std::to_string(rank) + " by " +
                             source + " but rank " + std::to_string(hint) + " by its file name or line prefix; using " +
                             std::to_string(rank));
    }
    if (s.rank_hints.size() > 1) {
      std::string hs;
      for (const auto& kv : s.rank_hints) hs += (hs.empty() ? "" : ", ") + std::to_string(kv.first);
      identity_.NoteConflict(s.host + ":" + std::to_string(s.pid) + " carries several rank hints (" + hs + ")");
    }
    if (rank < 0) rank = hint;
    s.rank = rank;
  }
}

std::vector<bool> JobState::MergeSubjectsOfOneRank() {
  std::map<int, int> owner;
  for (size_t i = 0; i < subjects_.all.size(); ++i) {
    const Subject& s = subjects_.all[i];
    if (s.rank >= 0 && s.pid < 0) owner.emplace(s.rank, static_cast<int>(i));
  }
  // Two processes on two hosts that claim one rank are not one process (two
  // jobs' logs mixed, a duplicate rank, a restart on another node): both are
  // kept, the later one labelled with its host, and the conflict noted.
  std::vector<bool> duplicate(subjects_.all.size());
  for (size_t i = 0; i < subjects_.all.size(); ++i) {
    Subject& s = subjects_.all[i];
    if (s.rank < 0) continue;
    auto it = owner.find(s.rank);
    if (it == owner.end()) {
      owner.emplace(s.rank, static_cast<int>(i));
    } else if (it->second != static_cast<int>(i)) {
      const Subject& o = subjects_.all[it->second];
      if (s.pid >= 0 && o.pid >= 0 && !s.host.empty() && !o.host.empty() && s.host != o.host && !s.host_from_hint &&
          !o.host_from_hint) {
        const std::string other = o.host + ":" + std::to_string(o.pid);
        identity_.NoteConflict("rank " + std::to_string(s.rank) + " is claimed by " + other + " and " + s.host + ":" +
                               std::to_string(s.pid) + " (two hosts); both are kept");
        duplicate[i] = true;
        // A fact, so a correlation can make it a finding (RANK-CLAIMED-BY-TWO-HOSTS),
        // cited at the process's first line that was evidence of anything.
        const int fact = rules_->fact(Fact::kRankClaimedElsewhere);
        const Evidence* first = FirstEvidence(s);
        if (fact >= 0 && first) {
          EvidenceRef ev{first->file, first->line, first->text, first->time};
          ev.rank = first->rank;
          if (first->origin >= 0) {
            ev.origin_file = inputs_.origins[first->origin];
            ev.origin_line = first->origin_line;
          }
          SetFact(static_cast<int>(i), fact, {}, other, 1, ev);
        }
        continue;
      }
      subjects_.Merge(static_cast<int>(i), it->second, rules_->facts(), &counters_.over_key_cap);
    }
  }
  return duplicate;
}

void JobState::MergeOneProcessStreams() {
  // A file whose identified lines all come from one process is that process's output
  // (torchrun --log-dir's attempt_k/<local_rank>/{stdout,stderr}.log, one rank's file, one
  // host's paste): its unprefixed lines (the bare NCCL version banner of <= 2.21, PyTorch's
  // and the launcher's lines) are that process's too. A file of several processes keeps them
  // on a subject of their own: whose they are is unknown.
  std::map<int, std::set<int>> writers;  // file -> live subjects with a process or rank
  for (size_t i = 0; i < subjects_.all.size(); ++i) {
    const Subject& s = subjects_.all[i];
    if (s.merged_away || (s.rank < 0 && s.pid < 0)) continue;
    for (int f : s.files) writers[f].insert(static_cast<int>(i));
  }
  for (size_t i = 0; i < subjects_.all.size(); ++i) {
    const Subject& s = subjects_.all[i];
    if (s.merged_away || s.rank >= 0 || s.pid >= 0 || s.files.size() != 1 || s.names_another) continue;
    auto w = writers.find(s.files[0]);
    if (w != writers.end() && w->second.size() == 1)
      subjects_.Merge(static_cast<int>(i), *w->second.begin(), rules_->facts(), &counters_.over_key_cap);
  }
}

void JobState::Relabel(const std::vector<bool>& duplicate) {
  for (size_t i = 0; i < subjects_.all.size(); ++i) {
    Subject& s = subjects_.all[i];
    if (s.rank >= 0)
      s.label = "rank " + std::to_string(s.rank);
    else if (s.pid >= 0)
      s.label = s.host.empty() ? "pid " + std::to_string(s.pid) : s.host + ":" + std::to_string(s.pid);
    if (duplicate[i]) s.label += " (" + s.host + ":" + std::to_string(s.pid) + ")";
  }
  for (auto& kv : comms_.by_id) {
    std::set<int> r;
    for (int i : kv.second.subjects) r.insert(LiveSubject(i));
    kv.second.subjects = r;
  }
  for (auto& kv : findings_.by_key) {
    std::set<int> r;
    for (int i : kv.second.subjects) r.insert(LiveSubject(i));
    kv.second.subjects = r;
    if (kv.second.first_subject >= 0) kv.second.first_subject = LiveSubject(kv.second.first_subject);
  }
  std::sort(identity_.conflicts.begin(), identity_.conflicts.end());
}

const Evidence* JobState::FirstEvidence(const Subject& s) {
  const FactValue* best = nullptr;
  auto consider = [&](const FactValue& v) {
    if (v.evidence.file >= 0 && (!best || SeenBefore(v.seen, best->seen))) best = &v;
  };
  for (const auto& [f, v] : s.facts.slots()) consider(v);
  for (const auto& [f, m] : s.keyed.slots()) {
    for (const auto& kv : m) consider(kv.second);
  }
  return best ? &best->evidence : nullptr;
}

void JobState::ResolvePointerComms() {
  // "ptr:host:pid:0x…" -> the commId that process's Init line gave the pointer.
  std::map<std::string, std::vector<int>> subjects_of;  // "host:pid" -> subjects
  for (size_t i = 0; i < subjects_.all.size(); ++i) {
    if (subjects_.all[i].pid >= 0)
      subjects_of[subjects_.all[i].host + ":" + std::to_string(subjects_.all[i].pid)].push_back(i);
  }
  std::map<std::string, std::string> rename;
  for (const auto& kv : comms_.by_id) {
    const std::string& id = kv.first;
    if (!StartsWith(id, "ptr:")) continue;
    const size_t last = id.rfind(':');
    auto subs = subjects_of.find(id.substr(4, last - 4));
    if (subs == subjects_of.end()) continue;
    std::string to;
    bool ambiguous = false;
    for (int si : subs->second) {
      if (static_cast<size_t>(si) >= comms_.ptr.size()) continue;
      auto p = comms_.ptr[si].find(std::string_view(id).substr(last + 1));
      if (p == comms_.ptr[si].end()) continue;
      ambiguous |= !to.empty() && to != p->second;
      to = p->second;
    }
    if (!to.empty() && !ambiguous) rename.emplace(id, to);
  }
  for (const auto& [from, to] : rename) {
    auto f = comms_.by_id.find(from);
    CommInfo moved = std::move(f->second);
    comms_.by_id.erase(f);
    auto t = comms_.by_id.find(to);
    if (t == comms_.by_id.end()) {
      moved.id = to;
      comms_.by_id.emplace(to, std::move(moved));
      continue;
    }
    t->second.Join(moved, /*o_is_later=*/false, [](int s) { return s; });
  }
  if (!rename.empty()) {
    for (auto& [si, ranks] : comms_.rank_in) {
      for (const auto& [from, to] : rename) {
        auto r = ranks.find(from);
        if (r == ranks.end()) continue;
        ranks.emplace(to, r->second);  // a rank the commId already has stays
        ranks.erase(r);
      }
    }
  }
  // Facts: values that name a folded communicator, and comm-keyed facts whose
  // key is still a pointer ("0x55d0… 2f": one call of that communicator).
  for (size_t si = 0; si < subjects_.all.size(); ++si) {
    Subject& s = subjects_.all[si];
    if (!rename.empty()) {
      for (auto& [f, v] : s.facts.slots()) {
        auto r = rename.find(v.value);
        if (r != rename.end()) v.value = r->second;
        for (const auto& [from, to] : rename) {
          auto it = std::find(v.values.begin(), v.values.end(), from);
          if (it == v.values.end()) continue;
          v.values.erase(it);
          InsertSetValue(&v.values, to);
        }
      }
    }
    if (si >= comms_.ptr.size() || comms_.ptr[si].empty()) continue;
    for (auto& [f, m] : s.keyed.slots()) {
      const FactSpec& spec = rules_->facts()[f];
      if (spec.key_kind != KeyKind::kComm) continue;
      std::vector<std::pair<std::string, std::string>> moves;  // old key, new key
      std::string translated;
      for (const auto& kv : m) {
        if (CommTable::TranslateKey(comms_.ptr[si], kv.first, &translated)) moves.emplace_back(kv.first, translated);
      }
      for (auto& [from, to] : moves) {
        auto it = m.find(from);
        FactValue v = std::move(it->second);
        m.erase(it);
        auto t = m.find(to);
        if (t == m.end())
          m.emplace(std::move(to), std::move(v));
        else
          MergeFact(spec, &t->second, std::move(v), MergeOrder::kBySeen);
      }
    }
  }
}

void JobState::JoinUnnamedComms() {
  // A COLL line names its communicator by the pointer of the process that printed it; only
  // an Init line ties the pointer to the commId every rank shares. A pasted trace often has
  // none: each rank's calls then stand alone and cannot be compared. Where no key was tied
  // to a commId and every rank traced exactly one communicator, those are one communicator
  // (kUnnamedComm). Two communicators on any rank, or any commId known: nothing is guessed.
  std::map<int, std::string> pointer_of;  // live ranked subject -> its one pointer
  for (size_t i = 0; i < subjects_.all.size(); ++i) {
    const Subject& s = subjects_.all[i];
    if (s.merged_away) continue;
    std::set<std::string_view> pointers;
    for (const auto& [f, m] : s.keyed.slots()) {
      if (rules_->facts()[f].key_kind != KeyKind::kComm) continue;
      for (const auto& kv : m) {
        std::string_view p = std::string_view(kv.first).substr(0, kv.first.find(' '));
        if (comms_.by_id.count(std::string(p))) return;  // a commId: the ranks are joined already
        pointers.insert(p);
      }
    }
    if (pointers.empty()) continue;
    if (pointers.size() > 1 || s.rank < 0) return;
    pointer_of.emplace(static_cast<int>(i), std::string(*pointers.begin()));
  }
  if (pointer_of.size() < 2) return;
  for (const auto& [si, pointer] : pointer_of) {
    const std::map<std::string, std::string, std::less<>> to{{pointer, kUnnamedComm}};
    for (auto& [f, m] : subjects_.all[si].keyed.slots()) {
      if (rules_->facts()[f].key_kind != KeyKind::kComm) continue;
      KeyedValues renamed;
      std::string key;
      for (auto& kv : m)
        renamed.emplace(CommTable::TranslateKey(to, kv.first, &key) ? key : kv.first, std::move(kv.second));
      m = std::move(renamed);
    }
  }
}

}  // namespace ncclscan
