#include "rules/engine_contract.h"

#include <algorithm>

namespace ncclscan {

const std::vector<EngineFact>& EngineFacts() {
  static const std::vector<EngineFact> kFacts = {
      {Fact::kNcclVersion, "nccl_version", MergeMode::kLast, false, KeyKind::kName,
       "the report's per-rank summary, the run's story, the corpus runner and known issues"},
      {Fact::kNetwork, "network", MergeMode::kLast, false, KeyKind::kName,
       "the report's per-rank summary and the run's story"},
      {Fact::kInterTransport, "inter_transport", MergeMode::kSet, false, KeyKind::kName,
       "the report's per-rank summary and the run's story"},
      {Fact::kInitStart, "init_start", MergeMode::kFirst, false, KeyKind::kName,
       "the identity events (Init START) and the run's story"},
      {Fact::kInitComplete, "init_complete", MergeMode::kLast, false, KeyKind::kName,
       "the identity events (Init COMPLETE) and the run's story"},
      {Fact::kCommAbort, "comm_abort", MergeMode::kFirst, false, KeyKind::kName,
       "the identity events (Abort) and the run's story"},
      {Fact::kFirstError, "first_error", MergeMode::kFirst, false, KeyKind::kName,
       "the report's per-rank summary and the run's story"},
      {Fact::kRankClaimedElsewhere, "rank_claimed_elsewhere", MergeMode::kFirst, false, KeyKind::kName,
       "the identity resolution (two hosts, one rank)"},
      {Fact::kLastOpcount,
       "last_opcount",
       MergeMode::kMax,
       true,
       KeyKind::kComm,
       "the extreme correlation's cut-off-rank test, the consensus model's COLL trace and the run's story",
       {"op", "count", "datatype", "root"}},
      {Fact::kLastEnqueued, "last_enqueued", MergeMode::kMax, true, KeyKind::kPg,
       "the report's per-rank summary and the run's story"},
      {Fact::kLastCompleted, "last_completed", MergeMode::kMax, true, KeyKind::kPg,
       "the report's per-rank summary and the run's story"},
      {Fact::kTimeoutSeq,
       "timeout_seq",
       MergeMode::kMin,
       true,
       KeyKind::kPg,
       "the report's per-rank summary, the trace's watchdog slices and the run's story",
       {"op", "timeout", "ran"}},
      {Fact::kP2pLast,
       "p2p_last",
       MergeMode::kMax,
       true,
       KeyKind::kComm,
       "the consensus model's send/receive pairing (its count)",
       {"count", "datatype", "op", "root"}},
      {Fact::kDesyncUnjoined, "desync_unjoined", MergeMode::kFirst, true, KeyKind::kName,
       "the consensus model's not-started check from text"},
      {Fact::kExitcode, "exitcode", MergeMode::kLast, false, KeyKind::kName,
       "the consensus model's died-first check (-6/-15 are victims)"},
      {Fact::kTimeoutOp, "timeout_op", MergeMode::kFirst, false, KeyKind::kName,
       "the consensus model's watchdog reading"},
      {Fact::kWorldSize, "world_size", MergeMode::kMax, false, KeyKind::kName,
       "the never-joined check's world (the culprit ranks)"},
      {Fact::kWorkSize, "work_size", MergeMode::kFirst, true, KeyKind::kName, "the consensus model's call sizes"},
      {Fact::kOom, "oom", MergeMode::kFirst, false, KeyKind::kName, "the run's story (a process's own failure)"},
      {Fact::kCrash, "crash", MergeMode::kFirst, false, KeyKind::kName, "the run's story (a process's own failure)"},
      {Fact::kElasticFailed, "elastic_failed", MergeMode::kFirst, false, KeyKind::kName,
       "the run's story (a process's own failure)"},
      {Fact::kJobKilled, "job_killed", MergeMode::kFirst, false, KeyKind::kName,
       "the died-first check (a job killed from outside)"},
      {Fact::kClosedPeer, "closed_peer", MergeMode::kSet, false, KeyKind::kName,
       "the peer-closed suspects of line findings"},
      {Fact::kNccltestsResult, "nccltests_result", MergeMode::kLast, false, KeyKind::kName,
       "the run's story of nccl-tests runs"},
      {Fact::kNccltestsRank, "nccltests_rank", MergeMode::kSet, false, KeyKind::kName,
       "the run's story of nccl-tests runs"},
      {Fact::kCudaDriver, "cuda_driver", MergeMode::kLast, false, KeyKind::kName, "the run's story (banner)"},
      {Fact::kBootstrapIf, "bootstrap_if", MergeMode::kLast, false, KeyKind::kName, "the run's story (bootstrap)"},
      {Fact::kSocketIf, "socket_if", MergeMode::kLast, false, KeyKind::kName, "the run's story (bootstrap)"},
      {Fact::kNetPlugin, "net_plugin", MergeMode::kLast, false, KeyKind::kName, "the run's story (bootstrap)"},
      {Fact::kIbDevices, "ib_devices", MergeMode::kLast, false, KeyKind::kName, "the run's story (bootstrap)"},
      {Fact::kIbMissing, "ib_missing", MergeMode::kLast, false, KeyKind::kName, "the run's story (bootstrap)"},
      {Fact::kCollChannels, "coll_channels", MergeMode::kLast, false, KeyKind::kName, "the run's story (topology)"},
      {Fact::kAlgoProto, "algo_proto", MergeMode::kSet, true, KeyKind::kName, "the run's story (topology)"},
      {Fact::kNvls, "nvls", MergeMode::kLast, false, KeyKind::kName, "the run's story (topology)"},
      {Fact::kIntraTransport, "intra_transport", MergeMode::kSet, false, KeyKind::kName, "the run's story (connect)"},
      {Fact::kP2pChannels, "p2p_channels", MergeMode::kCount, false, KeyKind::kName, "the run's story (connect)"},
      {Fact::kShmChannels, "shm_channels", MergeMode::kCount, false, KeyKind::kName, "the run's story (connect)"},
      {Fact::kGdr, "gdr", MergeMode::kLast, false, KeyKind::kName, "the run's story (connect)"},
      {Fact::kTorchVersion, "torch_version", MergeMode::kLast, false, KeyKind::kName,
       "the report's versions and known issues of component torch"},
      {Fact::kCleanEnd, "clean_end", MergeMode::kFirst, false, KeyKind::kName,
       "the run's story (teardown: the run shows its end)"},
      {Fact::kStallMissing, "stall_missing", MergeMode::kFirst, true, KeyKind::kName,
       "the stall inspector's lone-submitter check (consensus_text.cc)"},
      {Fact::kLastLine, "last_line", MergeMode::kLast, false, KeyKind::kName,
       "the scanner (every line under a rank's own prefix) and the rank-zero-alone check"},
      {Fact::kStoreWait,
       "store_wait",
       MergeMode::kFirst,
       false,
       KeyKind::kName,
       "the waiting ranks of the rank-0 check (a key rank 0 writes), of the never-joined check (a barrier) and "
       "the store_overfull check (more workers than the world)",
       {"awaits", "world", "joined"}},
      {Fact::kTransportChain, "transport_chain", MergeMode::kFirst, false, KeyKind::kName,
       "the peer map's lone reporter (its error came through transport code: the peer is the job's)"},
      {Fact::kNodes, "nodes", MergeMode::kMax, false, KeyKind::kName,
       "line findings of one node's launcher: on a one-node job a worker's local rank is its rank"},
      {Fact::kNprocPerNode, "nproc_per_node", MergeMode::kMax, false, KeyKind::kName,
       "the never-joined check's world where no world size is printed: nodes x processes a node"},
      {Fact::kGpuBus, "gpu_bus", MergeMode::kFirst, false, KeyKind::kName,
       "the join of a kernel log's GPU events (NVRM Xid) with the rank whose communicator init named that busId"},
      {Fact::kNccltestsBusbw, "nccltests_busbw", MergeMode::kMax, false, KeyKind::kName,
       "nccl-tests' best bus bandwidth, compared with what the job's transports carry (check nccltests_bandwidth)"},
      {Fact::kTopoRow,
       "topo_row",
       MergeMode::kLast,
       true,
       KeyKind::kName,
       "the topology checks (topo_gdr_distance, topo_p2p_path): nvidia-smi topo -m's matrix",
       {"columns"}},
      {Fact::kTopoNic, "topo_nic", MergeMode::kLast, true, KeyKind::kName,
       "the topology checks: nvidia-smi topo -m's NIC legend (NIC0 -> mlx5_0)"},
      {Fact::kNvlinkUp, "nvlink_up", MergeMode::kFirst, false, KeyKind::kName,
       "the shm_despite_nvlink check: NVLink a tool shows up between this host's GPUs"},
      {Fact::kEnv, "env", MergeMode::kLast, true, KeyKind::kName,
       "the nccltests_bandwidth check (a transport the user forced, NCCL_P2P_DISABLE / NCCL_IB_DISABLE, is no "
       "finding)"},
      {Fact::kWorkerPid, "worker_pid", MergeMode::kFirst, false, KeyKind::kName,
       "the join of a kernel line's pid (the OOM killer) with the rank whose worker torchrun says had it"},
      {Fact::kWatchdogFired, "watchdog_fired", MergeMode::kFirst, false, KeyKind::kName,
       "the extreme correlation's silent-rank test: a rank whose own watchdog fired waited, it was not silent"},
      {Fact::kRankStarted, "rank_started", MergeMode::kFirst, true, KeyKind::kRank,
       "never_joined: a rank it names by elimination printed its start (its line is the evidence); never_started: "
       "the ranks of a stated world that printed their start, where the logs stop"},
      {Fact::kRankStartedLast, "rank_started_last", MergeMode::kLast, true, KeyKind::kRank,
       "started_twice: a rank's last start line, beside its first (rank_started), shows two processes claiming it"},
      {Fact::kCollectiveFingerprint, "collective_fingerprint", MergeMode::kFirst, true, KeyKind::kRank,
       "the mismatch check: each rank's call as TORCH_DISTRIBUTED_DEBUG=DETAIL's fingerprint lines name it"},
      {Fact::kWorkersStopped, "workers_stopped", MergeMode::kFirst, false, KeyKind::kName,
       "the run's story: a launcher stopped a node's remaining workers (one had failed), an abnormal end"},
      {Fact::kJobEnd, "job_end", MergeMode::kFirst, false, KeyKind::kName,
       "the run's story: the whole job shows its end, not one process (stopped_collectives)"},
  };
  return kFacts;
}

const std::vector<std::string_view>& EngineEvents() {
  static const std::vector<std::string_view> kEvents = {"Init START",     "Init COMPLETE", "Abort START",
                                                        "Abort COMPLETE", "Abort",         "Destroy COMPLETE"};
  return kEvents;
}

bool IsEngineEvent(std::string_view event) {
  const auto& e = EngineEvents();
  return std::find(e.begin(), e.end(), event) != e.end();
}

const char* MergeModeName(MergeMode m) {
  switch (m) {
    case MergeMode::kFirst:
      return "first";
    case MergeMode::kLast:
      return "last";
    case MergeMode::kSet:
      return "set";
    case MergeMode::kMax:
      return "max";
    case MergeMode::kMin:
      return "min";
    case MergeMode::kCount:
      return "count";
  }
  return "?";
}

namespace {

std::string FieldList(const std::vector<std::string_view>& fields) {
  std::string list;
  for (std::string_view f : fields) list += std::string(list.empty() ? "" : ", ") + std::string(f);
  return "[" + list + "]";
}

}  // namespace

std::string EngineFactShape(const EngineFact& f) {
  std::string shape = std::string("merge ") + MergeModeName(f.merge);
  if (f.keyed) shape += std::string(", keyed by ") + KeyKindName(f.key_kind);
  if (!f.fields.empty()) shape += ", fields " + FieldList(f.fields);
  return shape;
}

std::string EngineFactMismatch(const EngineFact& want, const FactSpec& spec) {
  std::string out;
  auto add = [&out](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (spec.merge != want.merge) {
    add(std::string("merge ") + MergeModeName(want.merge) + ", not " + MergeModeName(spec.merge));
  }
  if (spec.keyed != want.keyed) {
    add(want.keyed ? "keyed: true" : "not keyed");
  } else if (want.keyed && spec.key_kind != want.key_kind) {
    add(std::string("key: ") + KeyKindName(want.key_kind) + ", not key: " + KeyKindName(spec.key_kind));
  }
  bool fields_ok = spec.fields.size() >= want.fields.size();
  for (size_t i = 0; fields_ok && i < want.fields.size(); ++i) fields_ok = spec.fields[i] == want.fields[i];
  if (!fields_ok) add("fields " + FieldList(want.fields) + " first");
  return out;
}

}  // namespace ncclscan
