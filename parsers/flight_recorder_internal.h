// Internal to parsers/: what the Flight Recorder reader (flight_recorder.cc:
// detection, the pickle and JSON forms) and the mapping of a dump's value
// tree (flight_recorder_map.cc) share.
//
// Thread-safety: plain functions over values.
#ifndef NCCLSCAN_PARSERS_FLIGHT_RECORDER_INTERNAL_H_
#define NCCLSCAN_PARSERS_FLIGHT_RECORDER_INTERNAL_H_

#include <string>

#include "parsers/flight_recorder.h"
#include "parsers/pickle.h"

namespace ncclscan {

// The value tree of a dump mapped to *out; false with *err when the tree is
// not a dump (its top level is no dict with 'entries', 'pg_config' or
// 'pg_status') or breaks a bound.
bool MapFlightRecorder(const PyTree& tree, FrDump* out, std::string* err);

}  // namespace ncclscan

#endif  // NCCLSCAN_PARSERS_FLIGHT_RECORDER_INTERNAL_H_
