// JobState as its parts (engine/state/parts.h): the encoding of an
// unfinalized state for partials, and Absorb, by which one state takes in the
// state of files scanned after its own, as if the scan had gone on into them.
// `ncclscan merge` folds partial states with it, in path order, so the result
// is the state one scan over all the files would have built
// (engine/run/partial.h says where that stops holding).
#include "engine/state/job_state.h"
#include "engine/state/wire.h"

namespace ncclscan {

void JobState::Encode(WireWriter* w) const {
  inputs_.Encode(w);
  subjects_.Encode(w);
  comms_.Encode(w);
  identity_.Encode(w);
  findings_.Encode(w);
  dumps_.Encode(w);
  counters_.Encode(w);
}

bool JobState::Decode(WireReader* r) {
  finalized_ = false;
  Limits l;
  l.facts = rules_->facts().size();
  l.rules = rules_->rules().size();
  inputs_.Decode(r, &l);
  previous_subject_.assign(inputs_.files.size(), -1);
  remembered_.assign(inputs_.files.size(), std::vector<std::string>(rules_->remembered().size()));
  subjects_.Decode(r, &l);
  comms_.Decode(r, l);
  identity_.Decode(r, l);
  findings_.Decode(r, l);
  dumps_.Decode(r);
  counters_.Decode(r);
  return r->ok() && r->done();
}

void JobState::Absorb(JobState&& later) {
  finalized_ = false;
  // Each part fills its share of the remap (files and origins, then
  // subjects) before the parts that point into them are merged.
  Remap r;
  inputs_.Absorb(std::move(later.inputs_), &r);
  previous_subject_.resize(inputs_.files.size(), -1);
  remembered_.resize(inputs_.files.size(), std::vector<std::string>(rules_->remembered().size()));
  subjects_.Absorb(std::move(later.subjects_), rules_->facts(), &r, &counters_);
  comms_.Absorb(std::move(later.comms_), r, &counters_.over_comm_cap);
  identity_.Absorb(std::move(later.identity_), r, subjects_.all);
  findings_.Absorb(std::move(later.findings_), r);
  dumps_.Absorb(std::move(later.dumps_), &counters_);
  counters_.Add(later.counters_);
  process_cache_ = EmptyProcessCache();
}

}  // namespace ncclscan
