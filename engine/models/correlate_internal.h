// Internal to engine/models: what the correlation kinds' files (correlate.cc:
// RunCorrelations, consensus, condition, absence, missing_ranks;
// correlate_extreme.cc: extreme, first_in_time, peer_map) share.
//
// Thread-safety: a CorrelationCtx belongs to one thread; the state is read only.
#ifndef NCCLSCAN_ENGINE_MODELS_CORRELATE_INTERNAL_H_
#define NCCLSCAN_ENGINE_MODELS_CORRELATE_INTERNAL_H_

#include <map>
#include <string>
#include <vector>

#include "engine/models/diagnosis.h"
#include "engine/state/job_state.h"

namespace ncclscan {

// A fact's comparable value on one subject ("" if absent).
std::string ValueOf(const FactValue& v, const FactSpec& spec);

// One correlation run over the live subjects: what a kind reads and how it
// makes its findings.
struct CorrelationCtx {
  const JobState& state;
  const CompiledCorrelation& c;
  std::vector<Finding>* out;
  std::vector<int> live;

  Finding Make(const std::vector<int>& subjects, const Vars& vars, const std::string& group) const {
    Finding f =
        FindingOf(c.spec.id.value, c.spec.kind, c.spec.category, c.spec.title, c.spec.finding, c.spec.references);
    f.group = group;
    FillSubjects(state, subjects, &f);
    f.count = static_cast<int64_t>(subjects.size());
    RenderTexts(&f, [&](const std::string& name, std::string* o) { AppendFindingVar(f, vars, name, o); });
    auto key = vars.find("key");
    if (key != vars.end() && c.fact >= 0) {
      // What the key names is declared by the fact (`key: comm` / `key: pg`).
      switch (state.rules().facts()[c.fact].key_kind) {
        case KeyKind::kComm:
          f.communicator = key->second;
          break;
        case KeyKind::kPg:
          f.process_group = key->second;
          break;
        case KeyKind::kName:
        case KeyKind::kRank:
        case KeyKind::kCount:
          break;
      }
    }
    return f;
  }

  template <typename Lookup>
  void RenderTexts(Finding* f, Lookup&& lookup) const {
    f->explanation = c.explanation.Render(lookup);
    f->remediation = c.remediation.Render(lookup);
  }

  // Evidence in the order given: callers list the named subjects' lines first,
  // then one line of the majority for contrast (the order is deterministic).
  void AddEvidence(Finding* f, const std::vector<const FactValue*>& values) const {
    bool first = true;
    for (const FactValue* fv : values) {
      if (f->evidence.size() >= kMaxEvidencePerFinding) break;
      if (fv->evidence.file >= 0) f->evidence.push_back(fv->evidence);
      if (first || fv->seen.file < f->first.file || (fv->seen.file == f->first.file && fv->seen.line < f->first.line)) {
        f->first = fv->seen;
        first = false;
      }
    }
  }

  // Values of a keyed or unkeyed fact per subject: key -> subject -> value.
  std::map<std::string, std::map<int, const FactValue*>> Values(int fact) const {
    std::map<std::string, std::map<int, const FactValue*>> m;
    const FactSpec& spec = state.rules().facts()[fact];
    for (int i : live) {
      const Subject& s = state.subjects()[i];
      if (spec.keyed) {
        for (const auto& kv : s.keyed[fact]) m[kv.first][i] = &kv.second;
      } else if (const FactValue* v = s.Get(fact)) {
        m[""][i] = v;
      }
    }
    return m;
  }
};

// The kinds of correlate_extreme.cc.
void Extreme(CorrelationCtx& x);
void FirstInTime(CorrelationCtx& x);
void PeerMap(CorrelationCtx& x);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_MODELS_CORRELATE_INTERNAL_H_
