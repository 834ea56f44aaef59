#include "engine/state/job_state.h"

#include <algorithm>

#include "parsers/path_hints.h"
#include "parsers/text_util.h"

namespace ncclscan {

std::string CompactRanks(const std::vector<int>& in) {
  std::vector<int> r = in;
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  std::string out;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(r[i]);
    if (j > i) out += "-" + std::to_string(r[j]);
    i = j + 1;
  }
  return out;
}

JobState::JobState(const RuleSet* rules) : rules_(rules) {}

int JobState::AddFile(const std::string& path) {
  // A WARN's return-code chain follows it in the same file: a chain at the top
  // of the next file is not read as closing it (a scan and a merge of one
  // partial per file then agree).
  for (std::string& w : open_warn_) w.clear();
  // Likewise a pointer -> commId translation: a pointer named in another file
  // is resolved at the end (ResolvePointerComms), not line by line.
  for (auto& m : file_comm_ptr_) m.clear();
  FileInfo f;
  f.path = path;
  PathHints h = ParsePathHints(path);
  f.path_rank = h.rank;
  f.path_local_rank = h.local_rank;
  f.path_host = h.host;
  f.path_pid = h.pid;
  files_.push_back(std::move(f));
  previous_subject_.push_back(-1);
  return static_cast<int>(files_.size()) - 1;
}

namespace {

// Distinct grep-prefix file names kept; past it, evidence cites the scanned file.
constexpr size_t kMaxOrigins = 1 << 16;

// Whether a grep -H -n prefix is a place to cite. The wrapper parser also takes
// a source location at the start of a line ("/site-packages/x.py:123: UserWarning")
// for one; citing that as where the log line came from would mislead.
bool CitableOrigin(std::string_view file, int64_t line) {
  if (file.empty() || line < 1) return false;
  for (std::string_view ext : {".py", ".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hpp", ".pyx"}) {
    if (EndsWith(file, ext)) return false;
  }
  return true;
}

}  // namespace

std::string JobState::CitedPath(const Evidence& e, std::string_view none) const {
  if (e.origin >= 0) return origins_[e.origin];
  return e.file >= 0 ? files_[e.file].path : std::string(none);
}

void JobState::Cite(const EvidenceRef& ev, Evidence* e) {
  e->origin = -1;
  e->origin_line = 0;
  if (!CitableOrigin(ev.origin_file, ev.origin_line)) return;
  e->origin = InternOrigin(ev.origin_file);
  if (e->origin >= 0) e->origin_line = ev.origin_line;
}

int JobState::InternOrigin(std::string_view name) {
  auto it = origin_index_.find(name);
  if (it != origin_index_.end()) return it->second;
  if (origins_.size() >= kMaxOrigins) return -1;
  origins_.emplace_back(name);
  origin_index_.emplace(origins_.back(), static_cast<int>(origins_.size()) - 1);
  return static_cast<int>(origins_.size()) - 1;
}

void InsertSetValue(std::vector<std::string>* values, std::string_view v) {
  auto it = std::lower_bound(values->begin(), values->end(), v);
  if ((it == values->end() || *it != v) && values->size() < kMaxSetValues) values->insert(it, std::string(v));
}

bool SeenBefore(const Seen& a, const Seen& b) {
  if (a.time >= 0 && b.time >= 0 && a.time != b.time) return a.time < b.time;
  if (a.file != b.file) return a.file < b.file;
  return a.line < b.line;
}

bool MergeReplaces(const FactSpec& spec, std::string_view incoming, std::string_view current) {
  switch (spec.merge) {
    case MergeMode::kLast:
      return true;
    case MergeMode::kMax:
      return CompareNumeric(incoming, current, spec.hex) > 0;
    case MergeMode::kMin:
      return CompareNumeric(incoming, current, spec.hex) < 0;
    case MergeMode::kFirst:
    case MergeMode::kSet:
    case MergeMode::kCount:
      return false;
  }
  return false;
}

namespace {

void MergeValue(const FactSpec& spec, FactValue* into, const FactValue& from) {
  switch (spec.merge) {
    case MergeMode::kFirst:
      if (SeenBefore(from.seen, into->seen)) {
        into->value = from.value;
        into->evidence = from.evidence;
        into->seen = from.seen;
      }
      break;
    case MergeMode::kLast:
      if (SeenBefore(into->seen, from.seen)) {
        into->value = from.value;
        into->evidence = from.evidence;
        into->seen = from.seen;
      }
      break;
    case MergeMode::kMax:
    case MergeMode::kMin: {
      if (MergeReplaces(spec, from.value, into->value)) {
        into->value = from.value;
        into->evidence = from.evidence;
        into->seen = from.seen;
      }
      break;
    }
    case MergeMode::kSet:
      for (const auto& v : from.values) InsertSetValue(&into->values, v);
      if (SeenBefore(from.seen, into->seen)) {
        into->evidence = from.evidence;
        into->seen = from.seen;
      }
      break;
    case MergeMode::kCount:
      if (SeenBefore(from.seen, into->seen)) {
        into->evidence = from.evidence;
        into->seen = from.seen;
      }
      break;
  }
  into->count += from.count;
  if (spec.merge == MergeMode::kCount) into->value = std::to_string(into->count);
}

}  // namespace

void JobState::NoteConflict(const std::string& msg) {
  // Distinct messages only, and a bounded number: memory must not grow with input.
  if (identity_conflicts_.size() >= kMaxIdentityConflicts) return;
  if (std::find(identity_conflicts_.begin(), identity_conflicts_.end(), msg) == identity_conflicts_.end()) {
    identity_conflicts_.push_back(msg);
  }
}

namespace {

// A communicator key names the pointer first and may go on after it ("0x55d0…
// 2f": one call of that communicator): the key with its pointer replaced by
// the commId `ptrs` gives it, or false when `ptrs` does not know the pointer.
bool TranslateCommKey(const std::map<std::string, std::string, std::less<>>& ptrs, std::string_view key,
                      std::string* out) {
  const size_t sp = key.find(' ');
  auto it = ptrs.find(key.substr(0, sp));
  if (it == ptrs.end()) return false;
  *out = it->second;
  if (sp != std::string_view::npos) out->append(key.substr(sp));
  return true;
}

}  // namespace

void JobState::SetFact(int si, int fact, std::string_view key, std::string_view value, int64_t count,
                       const EvidenceRef& ev) {
  const FactSpec& spec = rules_->facts()[fact];
  Subject* s = &subjects_[si];
  FactValue* fv;
  bool fresh;
  if (spec.keyed) {
    // Communicator keys are pointers until an Init line of this file names
    // the commId (the others are folded by ResolvePointerComms).
    std::string translated;
    if (spec.key_kind == KeyKind::kComm && !key.empty() && static_cast<size_t>(si) < file_comm_ptr_.size() &&
        TranslateCommKey(file_comm_ptr_[si], key, &translated)) {
      key = translated;
    }
    auto& m = s->keyed.At(fact);
    auto it = m.find(key);
    fresh = it == m.end();
    if (fresh && spec.window <= 0 && m.size() >= kMaxKeysPerFact) {
      counters_.over_key_cap++;
      return;
    }
    if (fresh) {
      TrimWindow(spec, &m);
      it = m.emplace(std::string(key), FactValue()).first;
    }
    fv = &it->second;
  } else {
    fresh = !s->facts.Find(fact);
    fv = &s->facts.At(fact);
  }
  fv->count += count;
  const bool take = fresh || MergeReplaces(spec, value, fv->value);
  // Unprefixed lines of a stream several processes may share all land on one subject: it
  // keeps every value a first/last fact took, since they can come from different processes.
  const bool stream = s->rank < 0 && s->pid < 0 && (spec.merge == MergeMode::kFirst || spec.merge == MergeMode::kLast);
  switch (stream ? MergeMode::kSet : spec.merge) {
    case MergeMode::kSet: {
      InsertSetValue(&fv->values, value);
      break;
    }
    case MergeMode::kCount:
      fv->value = std::to_string(fv->count);
      break;
    default:
      break;
  }
  if (take) {
    if (spec.merge != MergeMode::kCount) fv->value.assign(value.data(), value.size());
    ev.CopyTo(&fv->evidence);
    Cite(ev, &fv->evidence);
    fv->seen = ev.seen();
  }
}

CommInfo* JobState::CommFor(const std::string& id) {
  if (!CanTrackComm(id)) {
    counters_.over_comm_cap++;
    return nullptr;
  }
  CommInfo& ci = comms_[id];
  ci.id = id;
  return &ci;
}

void JobState::TrimWindow(const FactSpec& spec, KeyedValues* m) {
  // The latest keys only: at twice the window the oldest half goes
  // (amortised; per-call facts grow with the job).
  if (spec.window <= 0 || m->size() < 2 * static_cast<size_t>(spec.window)) return;
  std::vector<std::pair<Seen, std::string>> by_age;
  by_age.reserve(m->size());
  for (const auto& kv : *m) by_age.emplace_back(kv.second.seen, kv.first);
  // By input position (a strict order, unlike timestamps mixed with positions).
  std::sort(by_age.begin(), by_age.end(), [](const auto& a, const auto& b) {
    return a.first.file != b.first.file ? a.first.file < b.first.file : a.first.line < b.first.line;
  });
  for (size_t i = 0; i + spec.window < by_age.size(); ++i) m->erase(by_age[i].second);
}

void JobState::Apply(int file, int64_t line_no, const ParsedLine& line, int rule_idx, const re2::StringPiece* groups,
                     int num_groups) {
  const CompiledRule& r = rules_->rules()[rule_idx];
  counters_.matched_lines++;

  const MatchVars var{r, groups, num_groups};
  auto render = [&](const Template& t, std::string* buf) { return var.Render(t, buf); };

  int capture_rank = -1;
  if (r.subject_capture > 0 && r.subject_capture < num_groups && groups[r.subject_capture].data()) {
    std::string_view rv(groups[r.subject_capture].data(), groups[r.subject_capture].size());
    int64_t v;
    if (ConsumeInt(&rv, &v) && v < kMaxRanks) capture_rank = static_cast<int>(v);
  }
  int si = SubjectFor(file, line, capture_rank, r.spec.subject == SubjectMode::kPrevious);

  EvidenceRef ev{file, line_no, line.text, line.time};
  ev.origin_file = line.src_file;
  ev.origin_line = line.src_line;
  const Seen seen = ev.seen();

  std::string b1, b2;
  if (r.has_identity) {
    std::string_view comm = render(r.identity[kIdComm], &b1);
    std::string comm_id(render(r.identity[kIdCommId], &b2));
    if (!comm.empty()) {
      if (file_comm_ptr_.size() <= static_cast<size_t>(si)) file_comm_ptr_.resize(si + 1);
      auto& ptrs = file_comm_ptr_[si];
      auto it = ptrs.find(comm);
      const bool named = !comm_id.empty();
      if (!named) {
        comm_id = it != ptrs.end()
                      ? it->second
                      : "ptr:" + subjects_[si].host + ":" + std::to_string(subjects_[si].pid) + ":" + std::string(comm);
      }
      // Past the communicator cap a new pointer is not remembered either: its
      // lines fall back to the pointer's own id, as when no Init line named it.
      if (it == ptrs.end()) {
        if (CanTrackComm(comm_id)) ptrs.emplace(std::string(comm), comm_id);
      } else {
        it->second = comm_id;
      }
      if (named && (it != ptrs.end() || CanTrackComm(comm_id))) {
        if (comm_ptr_.size() <= static_cast<size_t>(si)) comm_ptr_.resize(si + 1);
        comm_ptr_[si][std::string(comm)] = comm_id;
      }
    }
    std::string rank_s(render(r.identity[kIdRank], &b1));
    std::string nranks_s(render(r.identity[kIdNranks], &b1));
    std::string event(render(r.identity[kIdEvent], &b1));
    CommInfo* ci = comm_id.empty() ? nullptr : CommFor(comm_id);
    if (!comm_id.empty()) {
      std::string_view nv = nranks_s;
      int64_t n;
      if (ci && ConsumeInt(&nv, &n) && n < kMaxRanks) ci->nranks = static_cast<int>(n);
      std::string_view rv = rank_s;
      int64_t rk;
      if (ConsumeInt(&rv, &rk) && rk < kMaxRanks) {
        int rank = static_cast<int>(rk);
        if (ci) {
          comm_rank_[si][comm_id] = rank;
          if (event == "Init START")
            ci->ranks_started.insert(rank);
          else if (event == "Init COMPLETE")
            ci->ranks_completed.insert(rank);
          else if (StartsWith(event, "Abort"))
            ci->ranks_aborted.insert(rank);
          ci->subjects.insert(si);
        }
        // Start/complete also become facts so correlations can use them.
        int f_start = rules_->fact(Fact::kInitStart), f_done = rules_->fact(Fact::kInitComplete);
        int f_abort = rules_->fact(Fact::kCommAbort), f_end = rules_->fact(Fact::kCleanEnd);
        if (event == "Init START" && f_start >= 0) SetFact(si, f_start, {}, comm_id, 1, ev);
        if (event == "Init COMPLETE" && f_done >= 0) SetFact(si, f_done, {}, comm_id, 1, ev);
        if (StartsWith(event, "Abort") && f_abort >= 0) SetFact(si, f_abort, {}, comm_id, 1, ev);
        if (event == "Destroy COMPLETE" && f_end >= 0) SetFact(si, f_end, {}, "Destroy COMPLETE", 1, ev);
      }
    }
    // A line may describe another process (a launcher's rank table): host + pid.
    int target = si;
    std::string id_host(render(r.identity[kIdHost], &b1));
    std::string_view id_pid = render(r.identity[kIdPid], &b2);
    int64_t pid_v;
    if (!id_host.empty() && ConsumeInt(&id_pid, &pid_v)) target = ProcessSubject(id_host, pid_v);
    std::string_view addr = render(r.identity[kIdAddress], &b1);
    if (!addr.empty() && !subjects_[target].host.empty()) {
      address_owner_[std::string(addr)] = subjects_[target].host;
      if (subject_address_.size() <= static_cast<size_t>(target)) subject_address_.resize(target + 1);
      if (subject_address_[target].empty()) subject_address_[target] = std::string(addr);
    }
    std::string_view gr = render(r.identity[kIdGlobalRank], &b1);
    int64_t g;
    if (!gr.empty() && ConsumeInt(&gr, &g) && g < kMaxRanks) {
      auto it = subject_global_rank_.find(target);
      if (it == subject_global_rank_.end()) {
        subject_global_rank_[target] = static_cast<int>(g);
      } else if (it->second != g) {
        NoteConflict(subjects_[target].host + ":" + std::to_string(subjects_[target].pid) + " is named rank " +
                     std::to_string(it->second) + " and rank " + std::to_string(g) +
                     " (one process driving several GPUs?); using " + std::to_string(it->second));
      }
    }
    // A weak hint at the process's global rank (e.g. "[Proxy Service 93]"): a
    // vote like a [rankN] prefix; a communicator's own rank line still wins.
    std::string_view rh = render(r.identity[kIdRankHint], &b1);
    int64_t rhv;
    if (!rh.empty() && ConsumeInt(&rh, &rhv) && rh.empty() && rhv >= 0 && rhv < kMaxRanks && subjects_[si].pid >= 0) {
      subjects_[si].rank_hints[static_cast<int>(rhv)] += 1;
    }
    // The return-code chain after a WARN ("file:line -> N") names its ncclResult_t.
    std::string_view result = render(r.identity[kIdResult], &b1);
    if (!result.empty() && static_cast<size_t>(si) < open_warn_.size() && !open_warn_[si].empty()) {
      auto it = line_findings_.find(open_warn_[si]);
      if (it != line_findings_.end() && it->second.result.empty()) it->second.result = std::string(result);
      open_warn_[si].clear();
    }
  }

  for (const CompiledFact& cf : r.facts) {
    std::string_view key = rules_->facts()[cf.fact].keyed ? render(cf.key, &b1) : std::string_view();
    SetFact(si, cf.fact, key, render(cf.value, &b2), 1, ev);
  }

  if (r.spec.finding.present) {
    std::string group;
    for (const auto& g : r.group_by) {
      if (!group.empty()) group += "\x1f";
      var(g, &group);
    }
    std::string key = r.spec.id.value + "\x1e" + group;
    auto it = line_findings_.find(key);
    if (it == line_findings_.end()) {
      LineFindingAcc acc;
      acc.rule = rule_idx;
      acc.group = group;
      // Values quoted in the explanation are bounded (kMaxCaptureText, cut
      // between characters); the group above keeps them whole.
      auto bounded = [](std::string v) {
        if (v.size() > kMaxCaptureText) v = std::string(CutUtf8(v, kMaxCaptureText - 3)) + "...";
        return v;
      };
      for (size_t i = 1; i < r.capture_names.size(); ++i) {
        if (r.capture_names[i].empty()) continue;
        std::string v;
        var(r.capture_names[i], &v);
        acc.vars[r.capture_names[i]] = bounded(std::move(v));
      }
      for (const auto& lk : r.lookups) {
        std::string v;
        var(lk.name, &v);
        acc.vars[lk.name] = bounded(std::move(v));
      }
      acc.first = seen;
      it = line_findings_.emplace(key, std::move(acc)).first;
    }
    LineFindingAcc& acc = it->second;
    acc.count++;
    acc.subjects.insert(si);
    if (acc.evidence.size() < kMaxEvidencePerFinding) {
      acc.evidence.emplace_back();
      ev.CopyTo(&acc.evidence.back());
      Cite(ev, &acc.evidence.back());
    }
    if (SeenBefore(seen, acc.first)) acc.first = seen;
    if (acc.count == 1 || SeenBefore(acc.last, seen)) acc.last = seen;
    if (line.level == NcclLevel::kWarn) {
      if (open_warn_.size() <= static_cast<size_t>(si)) open_warn_.resize(si + 1);
      open_warn_[si] = key;
    }
  }
}

void JobState::ApplyFolded(int file, const ParsedLine& line, int64_t lines, const FoldedFact* facts, int num_facts) {
  counters_.matched_lines += lines;
  int si = SubjectFor(file, line, -1, /*previous=*/false, lines);  // foldable rules have subject: line
  // In the order of the lines they keep: two entries whose keys meet after the
  // comm-pointer translation (two communicators of one process with one
  // commId) then merge as line by line would (max/min: the first line with the
  // extreme value; last: the latest; first/count: the earliest).
  std::vector<const FoldedFact*> order;
  order.reserve(static_cast<size_t>(num_facts));
  for (int i = 0; i < num_facts; ++i) order.push_back(&facts[i]);
  std::stable_sort(order.begin(), order.end(),
                   [](const FoldedFact* a, const FoldedFact* b) { return a->ev.line < b->ev.line; });
  for (const FoldedFact* f : order) SetFact(si, f->fact, f->key, f->value, f->count, f->ev);
}

void JobState::MergeSubject(int from, int into) {
  Subject& a = subjects_[from];
  Subject& b = subjects_[into];
  a.merged_away = true;
  a.merged_into = into;
  if (b.host.empty()) b.host = a.host;
  if (b.pid < 0) b.pid = a.pid;
  b.devices |= a.devices;
  for (int f : a.files) {
    if (std::find(b.files.begin(), b.files.end(), f) == b.files.end()) b.files.push_back(f);
  }
  for (const auto& [f, v] : a.facts.slots()) {
    if (FactValue* mine = b.facts.Find(f)) {
      MergeValue(rules_->facts()[f], mine, v);
    } else {
      b.facts.At(f) = v;
    }
  }
  for (const auto& [f, m] : a.keyed.slots()) {
    KeyedValues& mine = b.keyed.At(f);
    for (const auto& kv : m) {
      auto it = mine.find(kv.first);
      if (it == mine.end())
        mine.emplace(kv.first, kv.second);
      else
        MergeValue(rules_->facts()[f], &it->second, kv.second);
    }
  }
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
  for (size_t i = 0; i < subjects_.size(); ++i) {
    if (subjects_[i].pid >= 0) subjects_of[subjects_[i].host + ":" + std::to_string(subjects_[i].pid)].push_back(i);
  }
  std::map<std::string, std::string> rename;
  for (const auto& kv : comms_) {
    const std::string& id = kv.first;
    if (!StartsWith(id, "ptr:")) continue;
    const size_t last = id.rfind(':');
    auto subs = subjects_of.find(id.substr(4, last - 4));
    if (subs == subjects_of.end()) continue;
    std::string to;
    bool ambiguous = false;
    for (int si : subs->second) {
      if (static_cast<size_t>(si) >= comm_ptr_.size()) continue;
      auto p = comm_ptr_[si].find(std::string_view(id).substr(last + 1));
      if (p == comm_ptr_[si].end()) continue;
      ambiguous |= !to.empty() && to != p->second;
      to = p->second;
    }
    if (!to.empty() && !ambiguous) rename.emplace(id, to);
  }
  for (const auto& [from, to] : rename) {
    auto f = comms_.find(from);
    CommInfo moved = std::move(f->second);
    comms_.erase(f);
    auto t = comms_.find(to);
    if (t == comms_.end()) {
      moved.id = to;
      comms_.emplace(to, std::move(moved));
      continue;
    }
    CommInfo& c = t->second;
    if (c.nranks == 0) c.nranks = moved.nranks;
    c.ranks_started.insert(moved.ranks_started.begin(), moved.ranks_started.end());
    c.ranks_completed.insert(moved.ranks_completed.begin(), moved.ranks_completed.end());
    c.ranks_aborted.insert(moved.ranks_aborted.begin(), moved.ranks_aborted.end());
    c.subjects.insert(moved.subjects.begin(), moved.subjects.end());
  }
  if (!rename.empty()) {
    for (auto& [si, ranks] : comm_rank_) {
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
  for (size_t si = 0; si < subjects_.size(); ++si) {
    Subject& s = subjects_[si];
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
    if (si >= comm_ptr_.size() || comm_ptr_[si].empty()) continue;
    for (auto& [f, m] : s.keyed.slots()) {
      const FactSpec& spec = rules_->facts()[f];
      if (spec.key_kind != KeyKind::kComm) continue;
      std::vector<std::pair<std::string, std::string>> moves;  // old key, new key
      std::string translated;
      for (const auto& kv : m) {
        if (TranslateCommKey(comm_ptr_[si], kv.first, &translated)) moves.emplace_back(kv.first, translated);
      }
      for (auto& [from, to] : moves) {
        auto it = m.find(from);
        FactValue v = std::move(it->second);
        m.erase(it);
        auto t = m.find(to);
        if (t == m.end())
          m.emplace(std::move(to), std::move(v));
        else
          MergeValue(spec, &t->second, v);
      }
    }
  }
}

void JobState::Finalize() {
  ResolvePointerComms();
  // A wrapper's label (kubectl pod) that only ever prefixed the lines of processes printing
  // one host name is that host: its unprefixed lines (PyTorch, torchrun) belong there too.
  for (auto& sub : subjects_) {
    if (!sub.host_from_hint) continue;
    auto h = hint_hosts_.find(sub.host);
    if (h != hint_hosts_.end() && h->second.size() == 1) {
      sub.host = h->second.begin()->first;
      sub.host_from_hint = false;
    }
  }
  // 0. Two machines can share a host name (default images: "ubuntu"); when the
  // processes of one name bootstrap from different addresses, keep them apart.
  std::map<std::string, std::set<std::string>> addrs_of_host;
  for (size_t i = 0; i < subjects_.size() && i < subject_address_.size(); ++i) {
    if (!subject_address_[i].empty() && !subjects_[i].host.empty()) {
      addrs_of_host[subjects_[i].host].insert(subject_address_[i]);
    }
  }
  for (size_t i = 0; i < subjects_.size() && i < subject_address_.size(); ++i) {
    Subject& s = subjects_[i];
    if (!subject_address_[i].empty() && addrs_of_host[s.host].size() > 1) {
      s.host += "[" + subject_address_[i] + "]";
    }
  }
  for (auto& kv : address_owner_) {
    if (addrs_of_host[kv.second].size() > 1) kv.second += "[" + kv.first + "]";
  }

  // 1. Resolve the global rank of every process subject.
  for (size_t i = 0; i < subjects_.size(); ++i) {
    Subject& s = subjects_[i];
    if ((s.rank >= 0 && s.pid < 0) || s.over_cap) continue;  // a rank subject, or the summary past the cap
    int rank = -1;
    std::string source;
    auto g = subject_global_rank_.find(static_cast<int>(i));
    if (g != subject_global_rank_.end()) {
      rank = g->second;
      source = "ProcessGroupNCCL global rank";
    } else {
      auto cr = comm_rank_.find(static_cast<int>(i));
      if (cr != comm_rank_.end()) {
        int best_n = -1;
        for (const auto& kv : cr->second) {
          auto c = comms_.find(kv.first);
          int n = c == comms_.end() ? 0 : c->second.nranks;
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
    for (int f : s.files) labels_are_ranks &= !labels_not_ranks_.count(f);
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
      NoteConflict(s.host + ":" + std::to_string(s.pid) + " is rank " + std::to_string(rank) + " by " + source +
                   " but rank " + std::to_string(hint) + " by its file name or line prefix; using " +
                   std::to_string(rank));
    }
    if (s.rank_hints.size() > 1) {
      std::string hs;
      for (const auto& kv : s.rank_hints) hs += (hs.empty() ? "" : ", ") + std::to_string(kv.first);
      NoteConflict(s.host + ":" + std::to_string(s.pid) + " carries several rank hints (" + hs + ")");
    }
    if (rank < 0) rank = hint;
    s.rank = rank;
  }
  // 2. Merge every subject of the same rank into one (rank subjects first).
  std::map<int, int> owner;
  for (size_t i = 0; i < subjects_.size(); ++i) {
    const Subject& s = subjects_[i];
    if (s.rank >= 0 && s.pid < 0) owner.emplace(s.rank, static_cast<int>(i));
  }
  // Two processes on two hosts that claim one rank are not one process (two
  // jobs' logs mixed, a duplicate rank, a restart on another node): both are
  // kept, the later one labelled with its host, and the conflict noted.
  std::vector<bool> duplicate(subjects_.size());
  for (size_t i = 0; i < subjects_.size(); ++i) {
    Subject& s = subjects_[i];
    if (s.rank < 0) continue;
    auto it = owner.find(s.rank);
    if (it == owner.end()) {
      owner.emplace(s.rank, static_cast<int>(i));
    } else if (it->second != static_cast<int>(i)) {
      const Subject& o = subjects_[it->second];
      if (s.pid >= 0 && o.pid >= 0 && !s.host.empty() && !o.host.empty() && s.host != o.host && !s.host_from_hint &&
          !o.host_from_hint) {
        const std::string other = o.host + ":" + std::to_string(o.pid);
        NoteConflict("rank " + std::to_string(s.rank) + " is claimed by " + other + " and " + s.host + ":" +
                     std::to_string(s.pid) + " (two hosts); both are kept");
        duplicate[i] = true;
        // A fact, so a correlation can make it a finding (RANK-CLAIMED-BY-TWO-HOSTS),
        // cited at the process's first line that was evidence of anything.
        const int fact = rules_->fact(Fact::kRankClaimedElsewhere);
        const Evidence* first = FirstEvidence(s);
        if (fact >= 0 && first) {
          EvidenceRef ev{first->file, first->line, first->text, first->time};
          if (first->origin >= 0) {
            ev.origin_file = origins_[first->origin];
            ev.origin_line = first->origin_line;
          }
          SetFact(static_cast<int>(i), fact, {}, other, 1, ev);
        }
        continue;
      }
      MergeSubject(static_cast<int>(i), it->second);
    }
  }
  // 2b. torchrun --log-dir writes each worker's output to its own attempt_k/<local_rank>/
  // {stdout,stderr}.log: when the identified lines of such a file all come from one process,
  // its unprefixed lines (the bare NCCL version banner of <= 2.21) are that process's too.
  std::map<int, std::set<int>> writers;  // file -> live subjects with a process or rank
  for (size_t i = 0; i < subjects_.size(); ++i) {
    const Subject& s = subjects_[i];
    if (s.merged_away || (s.rank < 0 && s.pid < 0)) continue;
    for (int f : s.files) writers[f].insert(static_cast<int>(i));
  }
  for (size_t i = 0; i < subjects_.size(); ++i) {
    const Subject& s = subjects_[i];
    if (s.merged_away || s.rank >= 0 || s.pid >= 0 || s.files.size() != 1) continue;
    if (files_[s.files[0]].path_local_rank < 0) continue;
    auto w = writers.find(s.files[0]);
    if (w != writers.end() && w->second.size() == 1) MergeSubject(static_cast<int>(i), *w->second.begin());
  }
  // 3. Labels; comm membership follows merges.
  for (size_t i = 0; i < subjects_.size(); ++i) {
    Subject& s = subjects_[i];
    if (s.rank >= 0)
      s.label = "rank " + std::to_string(s.rank);
    else if (s.pid >= 0)
      s.label = s.host + ":" + std::to_string(s.pid);
    if (duplicate[i]) s.label += " (" + s.host + ":" + std::to_string(s.pid) + ")";
  }
  for (auto& kv : comms_) {
    std::set<int> r;
    for (int i : kv.second.subjects) r.insert(LiveSubject(i));
    kv.second.subjects = r;
  }
  for (auto& kv : line_findings_) {
    std::set<int> r;
    for (int i : kv.second.subjects) r.insert(LiveSubject(i));
    kv.second.subjects = r;
  }
  // A process's host is also its rank subject's host.
  std::sort(identity_conflicts_.begin(), identity_conflicts_.end());
}

std::set<std::string> JobState::Hosts() const {
  std::set<std::string> h;
  for (const auto& s : subjects_) {
    if (!s.merged_away && !s.host.empty()) h.insert(s.host);
  }
  return h;
}

std::vector<int> JobState::LiveSubjects() const {
  std::vector<int> out;
  for (size_t i = 0; i < subjects_.size(); ++i) {
    if (!subjects_[i].merged_away) out.push_back(static_cast<int>(i));
  }
  std::sort(out.begin(), out.end(), [&](int a, int b) {
    const Subject& x = subjects_[a];
    const Subject& y = subjects_[b];
    bool rx = x.rank >= 0, ry = y.rank >= 0;
    if (rx != ry) return rx;
    if (rx && x.rank != y.rank) return x.rank < y.rank;
    // Processes (host:pid) before subjects known only by their file, whose
    // label is a path: the order must not depend on how the path was spelled.
    bool px = x.pid >= 0, py = y.pid >= 0;
    if (px != py) return px;
    return x.label < y.label;
  });
  return out;
}

}  // namespace ncclscan
