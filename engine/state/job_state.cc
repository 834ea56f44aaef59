#include "engine/state/job_state.h"

#include <algorithm>

#include "parsers/path_hints.h"
#include "parsers/pci_address.h"
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
  for (std::string& w : findings_.open_warn) w.clear();
  // Likewise a pointer -> commId translation: a pointer named in another file
  // is resolved at the end (ResolvePointerComms), not line by line.
  for (auto& m : comms_.file_ptr) m.clear();
  FileInfo f;
  f.path = path;
  PathHints h = ParsePathHints(path);
  f.path_rank = h.rank;
  f.path_host = h.host;
  f.path_pid = h.pid;
  inputs_.files.push_back(std::move(f));
  previous_subject_.push_back(-1);
  remembered_.emplace_back(rules_->remembered().size());
  return static_cast<int>(inputs_.files.size()) - 1;
}

namespace {

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
  if (e.origin >= 0) return inputs_.origins[e.origin];
  return e.file >= 0 ? inputs_.files[e.file].path : std::string(none);
}

void JobState::Cite(const EvidenceRef& ev, Evidence* e) {
  e->origin = -1;
  e->origin_line = 0;
  if (!CitableOrigin(ev.origin_file, ev.origin_line)) return;
  e->origin = inputs_.InternOrigin(ev.origin_file);
  if (e->origin >= 0) e->origin_line = ev.origin_line;
}

void JobState::SetFact(int si, int fact, std::string_view key, std::string_view value, int64_t count,
                       const EvidenceRef& ev, const std::string_view* fields, size_t num_fields) {
  const FactSpec& spec = rules_->facts()[fact];
  // A rank key is a rank number: a line that names none (an empty capture) sets nothing.
  if (spec.keyed && spec.key_kind == KeyKind::kRank) {
    std::string_view digits = key;
    int64_t rank;
    if (ConsumeIntBelow(&digits, kMaxRanks, &rank) != IntParse::kOk || !digits.empty()) return;
  }
  Subject* s = &subjects_.all[si];
  FactValue* fv;
  bool fresh;
  if (spec.keyed) {
    // Communicator keys are pointers until an Init line of this file names
    // the commId (the others are folded by ResolvePointerComms).
    if (spec.key_kind == KeyKind::kComm && !key.empty() && static_cast<size_t>(si) < comms_.file_ptr.size() &&
        CommTable::TranslateKey(comms_.file_ptr[si], key, &translated_key_)) {
      key = translated_key_;  // (a member: its capacity stays, no allocation a line)
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
  const bool take = fresh || MergeTakes(spec, value, ev.seen(), fv->value, fv->seen, MergeOrder::kLater);
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
    if (fields) {
      fv->fields.resize(num_fields);
      for (size_t i = 0; i < num_fields; ++i) fv->fields[i].assign(fields[i].data(), fields[i].size());
    }
    ev.CopyTo(&fv->evidence);
    Cite(ev, &fv->evidence);
    fv->seen = ev.seen();
  }
}

void JobState::Apply(int file, int64_t line_no, const ParsedLine& line, int rule_idx, const re2::StringPiece* groups,
                     int num_groups) {
  const CompiledRule& r = rules_->rules()[rule_idx];
  counters_.matched_lines++;

  const MatchVars var{r, groups, num_groups, &remembered_[file]};
  const int si = RuleSubject(file, line, r, groups, num_groups);

  const EvidenceRef ev = EvidenceRef::Of(file, line_no, line);

  std::string b1, b2;
  if (r.has_identity) ApplyIdentity(r, var, si, ev);
  for (const CompiledFact& cf : r.facts) {
    std::string_view key = rules_->facts()[cf.fact].keyed ? var.Render(cf.key, &b1) : std::string_view();
    // Rendered into strings of their own (the scratch keeps its capacity), then viewed.
    const size_t nf = cf.fields.size();
    if (field_text_.size() < nf) field_text_.resize(nf);
    field_views_.resize(nf);
    for (size_t i = 0; i < nf; ++i) {
      const std::string_view v = var.Render(cf.fields[i], &b2);
      field_text_[i].assign(v.data(), v.size());
      field_views_[i] = field_text_[i];
    }
    SetFact(si, cf.fact, key, var.Render(cf.value, &b2), 1, ev, nf ? field_views_.data() : nullptr, nf);
  }

  if (r.spec.finding.present) AddToLineFinding(r, rule_idx, var, si, line, ev);
  // What this line remembers is read by the file's later lines, not its own.
  for (const auto& [slot, tmpl] : r.remember) {
    std::string v(var.Render(tmpl, &b1));
    remembered_[file][slot] = std::move(v);
  }
}

int JobState::RuleSubject(int file, const ParsedLine& line, const CompiledRule& r, const re2::StringPiece* groups,
                          int num_groups) {
  auto group = [&](int g) {
    return g > 0 && g < num_groups && groups[g].data() ? std::string_view(groups[g].data(), groups[g].size())
                                                       : std::string_view();
  };
  const SubjectMode mode = r.spec.subject;
  if (mode == SubjectMode::kHost) {
    // A line about a node (a launcher's report of one of its tasks, a node
    // failure): the node itself, one subject per host, never joined to a rank.
    const std::string_view host = group(r.subject_host);
    if (!host.empty()) {
      const SubjectKeyView key = SubjectKey::Device(host, -1);
      int s = subjects_.Find(key);
      if (s < 0) {
        Subject d;
        d.host = std::string(host);
        d.label = std::string(host);
        s = NewSubject(key, std::move(d));
      }
      subjects_.all[s].AddFile(file);
      return s;
    }
  }
  if (mode == SubjectMode::kProcess || mode == SubjectMode::kDevice) {
    // A line about another process or a GPU (a kernel log): on the host the
    // line names, else the host its wrapper or file names.
    std::string_view host = group(r.subject_host);
    if (host.empty()) host = line.host_hint;
    if (host.empty()) host = line.host;
    if (host.empty()) host = inputs_.files[file].path_host;
    int64_t pid = -1;
    if (!ParseInt(group(mode == SubjectMode::kProcess ? r.subject_capture : r.subject_pid), &pid)) pid = -1;
    // The process the line names; Finalize joins it to the process of that pid
    // on another host label, or by its GPU (fact gpu_bus) to the rank that used it.
    if (pid >= 0) return ProcessSubject(host, pid);
    const int64_t bus = mode == SubjectMode::kDevice ? PciBusNumber(group(r.subject_capture)) : -1;
    if (bus >= 0) {
      // The GPU, until Finalize finds the rank whose communicator init named its busId.
      const SubjectKeyView key = SubjectKey::Device(host, bus);
      int s = subjects_.Find(key);
      if (s < 0) {
        Subject d;
        d.host = std::string(host);
        d.label = "GPU " + std::string(group(r.subject_capture));
        s = NewSubject(key, std::move(d));
      }
      subjects_.all[s].AddFile(file);
      return s;
    }
  }
  int capture_rank = -1;
  if (mode == SubjectMode::kCapture) {
    std::string_view rv = group(r.subject_capture);
    int64_t v;
    if (ConsumeInt(&rv, &v) && v < kMaxRanks) capture_rank = static_cast<int>(v);
  }
  return SubjectFor(file, line, capture_rank, mode == SubjectMode::kPrevious);
}

void JobState::ApplyIdentity(const CompiledRule& r, const MatchVars& var, int si, const EvidenceRef& ev) {
  auto render = [&](const Template& t, std::string* buf) { return var.Render(t, buf); };
  std::string b1, b2;
  std::string_view comm = render(r.identity[kIdComm], &b1);
  std::string comm_id(render(r.identity[kIdCommId], &b2));
  if (!comm.empty()) {
    if (comms_.file_ptr.size() <= static_cast<size_t>(si)) comms_.file_ptr.resize(si + 1);
    auto& ptrs = comms_.file_ptr[si];
    auto it = ptrs.find(comm);
    const bool named = !comm_id.empty();
    if (!named) {
      comm_id = it != ptrs.end() ? it->second
                                 : "ptr:" + subjects_.all[si].host + ":" + std::to_string(subjects_.all[si].pid) + ":" +
                                       std::string(comm);
    }
    // Past the communicator cap a new pointer is not remembered either: its
    // lines fall back to the pointer's own id, as when no Init line named it.
    if (it == ptrs.end()) {
      if (comms_.CanTrack(comm_id)) ptrs.emplace(std::string(comm), comm_id);
    } else {
      it->second = comm_id;
    }
    if (named && (it != ptrs.end() || comms_.CanTrack(comm_id))) {
      if (comms_.ptr.size() <= static_cast<size_t>(si)) comms_.ptr.resize(si + 1);
      comms_.ptr[si][std::string(comm)] = comm_id;
    }
  }
  std::string rank_s(render(r.identity[kIdRank], &b1));
  std::string nranks_s(render(r.identity[kIdNranks], &b1));
  std::string event(render(r.identity[kIdEvent], &b1));
  CommInfo* ci = comm_id.empty() ? nullptr : comms_.For(comm_id, &counters_.over_comm_cap);
  if (!comm_id.empty()) {
    std::string_view nv = nranks_s;
    int64_t n;
    if (ci && ConsumeInt(&nv, &n) && n < kMaxRanks) ci->nranks = static_cast<int>(n);
    std::string_view rv = rank_s;
    int64_t rk;
    if (ConsumeInt(&rv, &rk) && rk < kMaxRanks) {
      int rank = static_cast<int>(rk);
      if (ci) {
        comms_.rank_in[si][comm_id] = rank;
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
  if (!addr.empty() && !subjects_.all[target].host.empty()) {
    identity_.address_owner[std::string(addr)] = subjects_.all[target].host;
    if (identity_.address.size() <= static_cast<size_t>(target)) identity_.address.resize(target + 1);
    if (identity_.address[target].empty()) identity_.address[target] = std::string(addr);
  }
  std::string_view gr = render(r.identity[kIdGlobalRank], &b1);
  int64_t g;
  if (!gr.empty() && ConsumeInt(&gr, &g) && g < kMaxRanks) {
    identity_.NameGlobalRank(target, static_cast<int>(g), subjects_.all[target]);
  }
  // A weak hint at the process's global rank (e.g. "[Proxy Service 93]"): a
  // vote like a [rankN] prefix; a communicator's own rank line still wins.
  std::string_view rh = render(r.identity[kIdRankHint], &b1);
  int64_t rhv;
  if (ParseInt(rh, &rhv) && rhv < kMaxRanks && subjects_.all[si].pid >= 0) {
    subjects_.all[si].rank_hints[static_cast<int>(rhv)] += 1;
  }
  // The return-code chain after a WARN ("file:line -> N") names its ncclResult_t.
  std::string_view result = render(r.identity[kIdResult], &b1);
  if (!result.empty() && static_cast<size_t>(si) < findings_.open_warn.size() && !findings_.open_warn[si].empty()) {
    auto it = findings_.by_key.find(findings_.open_warn[si]);
    if (it != findings_.by_key.end() && it->second.result.empty()) it->second.result = std::string(result);
    findings_.open_warn[si].clear();
  }
}

void JobState::AddToLineFinding(const CompiledRule& r, int rule_idx, const MatchVars& var, int si,
                                const ParsedLine& line, const EvidenceRef& ev) {
  const Seen seen = ev.seen();
  std::string group;
  for (const auto& g : r.group_by) {
    if (!group.empty()) group += "\x1f";
    var(g, &group);
  }
  std::string key = r.spec.id.value + "\x1e" + group;
  auto it = findings_.by_key.find(key);
  if (it == findings_.by_key.end()) {
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
    for (const auto& rr : r.reads_remembered) {
      std::string v;
      var(rr.first, &v);
      acc.vars[rr.first] = bounded(std::move(v));
    }
    acc.first = seen;
    acc.first_subject = si;
    it = findings_.by_key.emplace(key, std::move(acc)).first;
  }
  LineFindingAcc& acc = it->second;
  acc.count++;
  acc.subjects.insert(si);
  if (acc.evidence.size() < kMaxEvidencePerFinding) {
    acc.evidence.emplace_back();
    ev.CopyTo(&acc.evidence.back());
    Cite(ev, &acc.evidence.back());
    acc.evidence.back().subject = si;
  }
  if (SeenBefore(seen, acc.first)) {
    acc.first = seen;
    acc.first_subject = si;
  }
  if (acc.count == 1 || SeenBefore(acc.last, seen)) acc.last = seen;
  if (line.level == NcclLevel::kWarn) {
    if (findings_.open_warn.size() <= static_cast<size_t>(si)) findings_.open_warn.resize(si + 1);
    findings_.open_warn[si] = key;
  }
}

void JobState::ApplyFolded(int file, const ParsedLine& line, int64_t lines, const FoldedFact* facts, int num_facts) {
  counters_.matched_lines += lines;
  int si = SubjectFor(file, line, -1, /*previous=*/false, lines);  // foldable rules have subject: line
  // In the order of the lines they keep: two entries whose keys meet after the
  // comm-pointer translation (two communicators of one process with one
  // commId) then merge as line by line would (max/min: the first line with the
  // extreme value; last: the latest; first/count: the earliest).
  std::vector<const FoldedFact*>& order = folded_order_;  // a member: its capacity stays
  order.clear();
  for (int i = 0; i < num_facts; ++i) order.push_back(&facts[i]);
  std::stable_sort(order.begin(), order.end(),
                   [](const FoldedFact* a, const FoldedFact* b) { return a->ev.line < b->ev.line; });
  for (const FoldedFact* f : order) {
    SetFact(si, f->fact, f->key, f->value, f->count, f->ev, f->num_fields ? f->fields.data() : nullptr, f->num_fields);
  }
}

std::set<std::string> JobState::Hosts() const {
  std::set<std::string> h;
  for (const auto& s : subjects_.all) {
    if (!s.merged_away && !s.host.empty()) h.insert(s.host);
  }
  return h;
}

std::set<int> JobState::Ranks() const {
  std::set<int> r;
  for (const auto& s : subjects_.all) {
    if (!s.merged_away && s.rank >= 0) r.insert(s.rank);
  }
  return r;
}

int64_t JobState::StatedNodes() const {
  const int nodes = rules_->fact(Fact::kNodes);
  int64_t most = 0;
  if (nodes < 0) return most;
  for (const Subject& s : subjects_.all) {
    const FactValue* v = s.merged_away ? nullptr : s.Get(nodes);
    int64_t n;
    if (v && ParseInt(v->value, &n)) most = std::max(most, n);
  }
  return most;
}

std::vector<int> JobState::LiveSubjects() const {
  if (finalized_) return live_after_finalize_;
  std::vector<int> out;
  for (size_t i = 0; i < subjects_.all.size(); ++i) {
    if (!subjects_.all[i].merged_away) out.push_back(static_cast<int>(i));
  }
  // GPUs a kernel line named (no rank joined) go after the processes and
  // before the subjects known only by their file.
  std::vector<bool> device(subjects_.all.size());
  for (const auto& [key, i] : subjects_.index) device[i] = key.kind == SubjectKind::kDevice;
  std::sort(out.begin(), out.end(), [&](int a, int b) {
    const Subject& x = subjects_.all[a];
    const Subject& y = subjects_.all[b];
    bool rx = x.rank >= 0, ry = y.rank >= 0;
    if (rx != ry) return rx;
    if (rx && x.rank != y.rank) return x.rank < y.rank;
    // Processes (host:pid) before subjects known only by their file, whose
    // label is a path: the order must not depend on how the path was spelled.
    bool px = x.pid >= 0, py = y.pid >= 0;
    if (px != py) return px;
    if (device[a] != device[b]) return static_cast<bool>(device[a]);
    return x.label < y.label;
  });
  return out;
}

}  // namespace ncclscan
