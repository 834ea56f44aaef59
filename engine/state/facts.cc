// The merge algebra of facts (engine/state/facts.h) and their encodings.
#include "engine/state/facts.h"

#include "engine/state/wire.h"

namespace ncclscan {

bool SeenBefore(const Seen& a, const Seen& b) {
  if (a.time >= 0 && b.time >= 0 && a.time != b.time) return a.time < b.time;
  if (a.file != b.file) return a.file < b.file;
  return a.line < b.line;
}

void InsertSetValue(std::vector<std::string>* values, std::string_view v) {
  auto it = std::lower_bound(values->begin(), values->end(), v);
  if ((it == values->end() || *it != v) && values->size() < kMaxSetValues) values->insert(it, std::string(v));
}

bool MergeTakes(const FactSpec& spec, std::string_view incoming, const Seen& incoming_seen, std::string_view current,
                const Seen& current_seen, MergeOrder order) {
  const bool by_seen = order == MergeOrder::kBySeen;
  if (!spec.placeholder.empty()) {
    const bool incoming_unknown = incoming == spec.placeholder, current_unknown = current == spec.placeholder;
    if (incoming_unknown != current_unknown) return current_unknown;
  }
  switch (spec.merge) {
    case MergeMode::kLast:
      return !by_seen || SeenBefore(current_seen, incoming_seen);
    case MergeMode::kMax:
      return CompareNumeric(incoming, current, spec.hex) > 0;
    case MergeMode::kMin:
      return CompareNumeric(incoming, current, spec.hex) < 0;
    case MergeMode::kFirst:
    case MergeMode::kSet:
    case MergeMode::kCount:
      // A later line never comes first; from anywhere, the earlier one does.
      return by_seen && SeenBefore(incoming_seen, current_seen);
  }
  return false;
}

void MergeFact(const FactSpec& spec, FactValue* into, FactValue&& from, MergeOrder order) {
  into->count += from.count;
  for (const auto& v : from.values) InsertSetValue(&into->values, v);
  if (MergeTakes(spec, from.value, from.seen, into->value, into->seen, order)) {
    if (spec.merge != MergeMode::kCount) into->value = std::move(from.value);
    into->fields = std::move(from.fields);
    into->evidence = std::move(from.evidence);
    into->seen = from.seen;
  }
  if (spec.merge == MergeMode::kCount) into->value = std::to_string(into->count);
}

void TrimWindow(const FactSpec& spec, KeyedValues* m) {
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

void MergeFacts(const std::vector<FactSpec>& specs, FactSlots<FactValue>* into_facts, KeyedSlots* into_keyed,
                FactSlots<FactValue>&& from_facts, KeyedSlots&& from_keyed, MergeOrder order, uint64_t* over_key_cap) {
  // The facts `into` gains, reserved at once: a vector grown one at a time
  // doubles, and a job's rank subjects are merged from its processes.
  size_t gained = 0;
  for (const auto& slot : from_facts.slots()) gained += into_facts->Find(slot.first) == nullptr;
  into_facts->Reserve(gained);
  for (auto& [f, v] : from_facts.slots()) {
    if (FactValue* mine = into_facts->Find(f)) {
      MergeFact(specs[f], mine, std::move(v), order);
    } else {
      into_facts->At(f) = std::move(v);
    }
  }
  for (auto& [f, from] : from_keyed.slots()) {
    const FactSpec& spec = specs[f];
    KeyedValues& m = into_keyed->At(f);
    for (auto& kv : from) {
      auto k = m.find(kv.first);
      if (k != m.end()) {
        MergeFact(spec, &k->second, std::move(kv.second), order);
      } else if (spec.window <= 0 && m.size() >= kMaxKeysPerFact) {
        ++*over_key_cap;
      } else {
        TrimWindow(spec, &m);
        m.emplace(kv.first, std::move(kv.second));
      }
    }
  }
}

// ---- encodings ----

void Put(WireWriter* w, const Seen& s) {
  w->D(s.time);
  w->I(s.file);
  w->I(s.line);
}

void Put(WireWriter* w, const Evidence& e) {
  w->I(e.file);
  w->I(e.line);
  w->S(e.text);
  w->D(e.time);
  w->I(e.origin);
  w->I(e.origin_line);
  w->I(e.rank);
  w->I(e.subject);
}

void Put(WireWriter* w, const FactValue& v) {
  w->S(v.value);
  PutStrings(w, v.values);
  PutStrings(w, v.fields);
  w->I(v.count);
  Put(w, v.evidence);
  Put(w, v.seen);
}

void Get(WireReader* r, Seen* s, const Limits& l) {
  s->time = r->D();
  s->file = r->Index(-1, l.files);
  s->line = r->I();
  CheckTime(r, s->time);
  CheckLine(r, s->file, s->line);
}

void Get(WireReader* r, Evidence* e, const Limits& l) {
  e->file = r->Index(-1, l.files);
  e->line = r->I();
  e->text = r->S();
  e->time = r->D();
  e->origin = r->Index(-1, l.origins);
  e->origin_line = r->I();
  e->rank = static_cast<int>(r->I());
  if (e->rank < -1 || e->rank >= kMaxRanks) r->Fail();
  const int64_t subject = r->I();
  if (subject < -1 || (subject >= 0 && static_cast<uint64_t>(subject) >= l.subjects)) r->Fail();
  e->subject = r->ok() ? static_cast<int>(subject) : -1;
  CheckLine(r, e->file, e->line);
  CheckTime(r, e->time);
  if (e->origin_line < -1) r->Fail();
}

void Get(WireReader* r, FactValue* v, const Limits& l) {
  v->value = r->S();
  GetStrings(r, &v->values);
  GetStrings(r, &v->fields);
  v->count = r->I();
  CheckCount(r, v->count);
  Get(r, &v->evidence, l);
  Get(r, &v->seen, l);
}

}  // namespace ncclscan
