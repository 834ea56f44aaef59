// The Flight Recorder dumps JobState holds (HeldDumps, engine/state/parts.h):
// their encoding and their merge.
#include "engine/state/parts.h"
#include "engine/state/wire.h"

namespace ncclscan {

namespace {

void PutSizes(WireWriter* w, const std::vector<std::vector<int64_t>>& v) {
  w->U(v.size());
  for (const auto& inner : v) {
    w->U(inner.size());
    for (int64_t x : inner) w->I(x);
  }
}

void GetSizes(WireReader* r, std::vector<std::vector<int64_t>>* v) {
  size_t n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    v->emplace_back();
    size_t k = r->Count();
    for (size_t j = 0; j < k && r->ok(); ++j) v->back().push_back(r->I());
  }
}

void Put(WireWriter* w, const FrFile& f) {
  w->S(f.path);
  w->I(f.rank);
  const FrDump& d = f.dump;
  w->S(d.version);
  w->S(d.nccl_version);
  w->U(d.pg_config.size());
  for (const auto& kv : d.pg_config) {
    w->S(kv.first);
    w->S(kv.second.name);
    w->S(kv.second.desc);
    w->U(kv.second.ranks.size());
    for (int rk : kv.second.ranks) w->I(rk);
  }
  w->U(d.pg_status.size());
  for (const auto& kv : d.pg_status) {
    w->S(kv.first);
    w->I(kv.second.last_enqueued);
    w->I(kv.second.last_started);
    w->I(kv.second.last_completed);
  }
  w->U(d.entries.size());
  for (const FrEntry& e : d.entries) {
    w->I(e.record_id);
    w->S(e.pg_id);
    w->S(e.pg_name);
    w->S(e.pg_desc);
    w->I(e.collective_seq_id);
    w->I(e.p2p_seq_id);
    w->I(e.op_id);
    w->S(e.profiling_name);
    w->S(e.state);
    w->U(e.is_p2p);
    w->U(e.retired);
    w->D(e.time_created_ns);
    w->D(e.time_started_ns);
    w->D(e.time_completed_ns);
    w->D(e.duration_ms);
    w->I(e.timeout_ms);
    PutSizes(w, e.input_sizes);
    PutSizes(w, e.output_sizes);
    PutStrings(w, e.input_dtypes);
    PutStrings(w, e.output_dtypes);
    w->S(e.top_frame);
  }
}

void Get(WireReader* r, FrFile* f) {
  f->path = r->S();
  f->rank = static_cast<int>(r->I());
  FrDump& d = f->dump;
  d.version = r->S();
  d.nccl_version = r->S();
  size_t n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    FrProcessGroup& pg = d.pg_config[r->S()];
    pg.name = r->S();
    pg.desc = r->S();
    size_t k = r->Count();
    for (size_t j = 0; j < k && r->ok(); ++j) pg.ranks.push_back(static_cast<int>(r->I()));
  }
  n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    FrPgStatus& st = d.pg_status[r->S()];
    st.last_enqueued = r->I();
    st.last_started = r->I();
    st.last_completed = r->I();
  }
  n = r->Count();
  if (n > kMaxFrEntriesPerDump) r->Fail();  // more than a scan keeps
  for (size_t i = 0; i < n && r->ok(); ++i) {
    FrEntry& e = d.entries.emplace_back();
    e.record_id = r->I();
    e.pg_id = r->S();
    e.pg_name = r->S();
    e.pg_desc = r->S();
    e.collective_seq_id = r->I();
    e.p2p_seq_id = r->I();
    e.op_id = r->I();
    e.profiling_name = r->S();
    e.state = r->S();
    e.is_p2p = r->U() != 0;
    e.retired = r->U() != 0;
    e.time_created_ns = r->D();
    e.time_started_ns = r->D();
    e.time_completed_ns = r->D();
    e.duration_ms = r->D();
    e.timeout_ms = r->I();
    GetSizes(r, &e.input_sizes);
    GetSizes(r, &e.output_sizes);
    GetStrings(r, &e.input_dtypes);
    GetStrings(r, &e.output_dtypes);
    e.top_frame = r->S();
  }
}

}  // namespace

void HeldDumps::Encode(WireWriter* w) const {
  w->U(files.size());
  for (const auto& f : files) Put(w, f);
}

void HeldDumps::Decode(WireReader* r) {
  size_t n = r->Count();
  for (size_t i = 0; i < n && r->ok(); ++i) {
    FrFile f;
    Get(r, &f);
    // A dump's ranks are ints (the Flight Recorder reader takes up to INT32_MAX).
    if (f.rank < -1) r->Fail();
    for (const auto& pg : f.dump.pg_config) {
      for (int rk : pg.second.ranks) {
        if (rk < 0) r->Fail();
      }
    }
    // Held as a scan holds them; entries past the bound are more than a scan keeps.
    if (r->ok() && Add(std::move(f)) != 0) r->Fail();
  }
}

void HeldDumps::Absorb(HeldDumps&& later, Counters* c) {
  for (auto& f : later.files) c->over_fr_entry_cap += Add(std::move(f));
}

}  // namespace ncclscan
