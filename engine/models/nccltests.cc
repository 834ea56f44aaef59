// nccltests_bandwidth (issue 26): the best bus bandwidth an nccl-tests table
// printed, read beside the transports NCCL chose in the same log. A result is
// only called low where the log names what limits it: TCP sockets between
// nodes, InfiniBand without GPUDirect RDMA, host memory (SHM) instead of P2P
// inside a node, or IB with GPUDirect RDMA far below even one EDR link per NIC.
// Without such a transport line nothing is said: a number alone is no problem
// (one 100 Gb/s NIC per node tops out near 12 GB/s, and that is healthy).
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "engine/models/consensus_checks.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

// One EDR (100 Gb/s) port carries about 12 GB/s of bus bandwidth; a result
// under a quarter of that per NIC in use is far below any IB link.
constexpr double kFarBelowPerNic = 3.0;

// What the job's transport lines say, over every process.
struct Transports {
  std::set<std::string> hosts;
  bool socket = false, ib = false, other_net = false;
  bool gdr_yes = false, gdr_no = false;
  bool p2p = false, shm = false;
  int nics = 0;  // the most HCAs one process listed ("NET/IB : Using [0]mlx5_0:1/IB [1]…")
  int nodes = 0;
  Evidence net_line;                                   // a line that shows the inter-node transport
  bool forced_p2p_off = false, forced_ib_off = false;  // NCCL_P2P_DISABLE=1, NCCL_IB_DISABLE=1
};

bool HasValue(const FactValue* v, std::string_view needle) {
  if (!v) return false;
  if (v->value.find(needle) != std::string::npos) return true;
  for (const auto& x : v->values) {
    if (x.find(needle) != std::string::npos) return true;
  }
  return false;
}

Transports ReadTransports(const JobState& state) {
  const RuleSet& rules = state.rules();
  const int inter = rules.fact(Fact::kInterTransport), network = rules.fact(Fact::kNetwork);
  const int intra = rules.fact(Fact::kIntraTransport), gdr = rules.fact(Fact::kGdr);
  const int devices = rules.fact(Fact::kIbDevices), nodes = rules.fact(Fact::kNodes);
  const int env = rules.fact(Fact::kEnv);
  auto set_to_one = [&](const Subject& sub, std::string_view var) {
    const KeyedValues* m = env >= 0 ? sub.keyed.Find(env) : nullptr;
    if (!m) return false;
    auto it = m->find(var);
    return it != m->end() && it->second.value == "1";
  };
  Transports t;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if ((sub.pid >= 0 || sub.rank >= 0) && !sub.host.empty()) t.hosts.insert(sub.host);
    const FactValue* net = inter >= 0 ? sub.Get(inter) : nullptr;
    const FactValue* chosen = network >= 0 ? sub.Get(network) : nullptr;
    const bool socket = HasValue(net, "Socket") || HasValue(chosen, "Socket");
    const bool ib = HasValue(net, "IB") || HasValue(chosen, "IB");
    t.socket |= socket;
    t.ib |= ib;
    t.other_net |= (net && !socket && !ib);
    if (net && t.net_line.file < 0) t.net_line = net->evidence;
    if (const FactValue* g = gdr >= 0 ? sub.Get(gdr) : nullptr) {
      t.gdr_yes |= g->value == "yes";
      t.gdr_no |= g->value == "no";
    }
    const FactValue* in = intra >= 0 ? sub.Get(intra) : nullptr;
    t.p2p |= HasValue(in, "P2P");
    t.shm |= HasValue(in, "SHM");
    if (const FactValue* d = devices >= 0 ? sub.Get(devices) : nullptr) {
      int n = 0;
      for (size_t at = d->value.find('['); at != std::string::npos; at = d->value.find('[', at + 1)) ++n;
      t.nics = std::max(t.nics, std::max(n, 1));
    }
    t.forced_p2p_off |= set_to_one(sub, "NCCL_P2P_DISABLE");
    t.forced_ib_off |= set_to_one(sub, "NCCL_IB_DISABLE");
    if (const FactValue* n = nodes >= 0 ? sub.Get(nodes) : nullptr) {
      t.nodes = std::max(t.nodes, static_cast<int>(std::strtol(n->value.c_str(), nullptr, 10)));
    }
  }
  return t;
}

}  // namespace

void Checks::NcclTestsBandwidth(const CompiledCorrelation& c) const {
  const int busbw = state.rules().fact(Fact::kNccltestsBusbw);
  if (busbw < 0) return;
  const FactValue* best = nullptr;
  for (int s : state.LiveSubjects()) {
    const FactValue* v = state.subjects()[s].Get(busbw);
    if (v && !v->value.empty() && (!best || CompareNumeric(v->value, best->value, false) > 0)) best = v;
  }
  if (!best) return;
  const double bw = std::strtod(best->value.c_str(), nullptr);
  if (!(bw > 0)) return;  // one rank: 0 by definition
  const Transports t = ReadTransports(state);
  const bool multi_node = t.hosts.size() > 1 || t.nodes > 1;
  std::string source, causes, test;
  // A transport the user chose is what they measured, not a problem to report.
  if (t.forced_p2p_off && !multi_node) return;
  if (t.forced_ib_off && multi_node) return;
  if (multi_node && t.socket) {
    source = "TCP sockets (NET/Socket) between the nodes";
    causes =
        "every byte between nodes goes through the kernel's TCP stack and host memory; a 25-100 GbE "
        "link gives 2-10 GB/s at best, far below InfiniBand or RoCE";
    test =
        "if the nodes have IB or RoCE NICs, find why NCCL did not take them (NCCL_DEBUG=INFO's NET/IB lines, "
        "NCCL_IB_DISABLE, the rdma-core packages and /dev/infiniband in the container, the net plugin)";
  } else if (multi_node && t.ib && t.gdr_no && !t.gdr_yes) {
    source = "InfiniBand without GPUDirect RDMA";
    causes =
        "every transfer is staged through host memory (no GDRDMA on the channels): the CPU's PCIe "
        "and memory bandwidth, not the NICs, set the pace";
    test =
        "load nvidia-peermem (or use dma-buf with a recent driver and NCCL), check the GPU-NIC PCIe "
        "distance (nvidia-smi topo -m; NCCL_NET_GDR_LEVEL) and rerun: the channel lines should say "
        "via NET/IB/<n>/GDRDMA";
  } else if (multi_node && t.ib && bw < kFarBelowPerNic * std::max(t.nics, 1)) {
    source = fmt::format("InfiniBand{} over {} NIC(s)", t.gdr_yes ? " with GPUDirect RDMA" : "", std::max(t.nics, 1));
    causes =
        "far below even one EDR (100 Gb/s, ~12 GB/s) link per NIC: a port that trained at a lower "
        "rate or width, a NIC on the far PCIe root from its GPUs, congestion or a misrouted fabric";
    test =
        "check each port's rate and state (ibstat), the GPU-NIC placement (nvidia-smi topo -m), and "
        "run ib_write_bw between the two nodes to measure the fabric alone";
  } else if (!multi_node && t.shm && !t.p2p) {
    source = "host shared memory (SHM) between the GPUs of one node, no P2P";
    causes =
        "every transfer is copied through host memory instead of GPU to GPU over NVLink or PCIe P2P "
        "(P2P disabled, unsupported between these GPUs, or blocked by ACS / an IOMMU or a VM)";
    test =
        "run nvidia-smi topo -m and p2pBandwidthLatencyTest; check NCCL_P2P_DISABLE / NCCL_P2P_LEVEL, "
        "ACS on the PCIe switches and the IOMMU (iommu=pt)";
  } else {
    return;
  }
  std::vector<Evidence> ev{best->evidence};
  if (t.net_line.file >= 0 && multi_node) ev.push_back(t.net_line);
  Vars vars{{"value", best->value}, {"source", source}, {"causes", causes}, {"test", test}};
  Emit(c, {}, {}, vars, "nccl-tests", ev);
}

}  // namespace ncclscan
