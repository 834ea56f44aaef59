// The topology checks (issue 26): nvidia-smi topo -m's matrix (facts topo_row,
// topo_nic; rules/inventory.yaml) read the way NCCL reads the same PCIe tree
// (src/graph/paths.cc). GPUDirect RDMA is used only for a NIC at PXB or closer
// to the GPU unless NCCL_NET_GDR_LEVEL says otherwise (topo_gdr_distance), and
// P2P between two GPUs whose path crosses the CPU (PHB, NODE, SYS) is off on
// Intel and ARM CPUs, where NCCL copies through host memory instead
// (topo_p2p_path). Both say why a transport line reads as it does; they are
// context, not a diagnosis.
#include <fmt/format.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/models/consensus_checks.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

// nvidia-smi's link words, nearest first (its legend).
int LinkRank(std::string_view w) {
  if (w == "X") return 0;
  if (StartsWith(w, "NV")) return 1;
  if (w == "PIX") return 2;
  if (w == "PXB") return 3;
  if (w == "PHB") return 4;
  if (w == "NODE") return 5;
  if (w == "SYS" || w == "SOC") return 6;
  return -1;
}
constexpr int kPxb = 3;

std::vector<std::string> Words(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    const size_t b = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > b) out.emplace_back(s.substr(b, i - b));
  }
  return out;
}

bool IsGpu(std::string_view col) { return StartsWith(col, "GPU"); }

// One host's matrix: for each row device, its link to each column device.
struct Matrix {
  std::string host;
  std::map<std::string, std::map<std::string, std::string>> link;  // row -> column -> word
  std::map<std::string, std::string> nic_name;                     // NIC0 -> mlx5_0
  std::vector<Evidence> rows;
};

std::vector<Matrix> ReadMatrices(const JobState& state) {
  const int row_fact = state.rules().fact(Fact::kTopoRow), nic_fact = state.rules().fact(Fact::kTopoNic);
  std::vector<Matrix> out;
  if (row_fact < 0) return out;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    const KeyedValues* rows = sub.keyed.Find(row_fact);
    if (!rows || rows->empty()) continue;
    Matrix m;
    m.host = sub.host;
    for (const auto& [dev, v] : *rows) {
      if (v.fields.empty()) continue;
      const std::vector<std::string> cols = Words(v.fields[0]), cells = Words(v.value);
      // A row that does not fit its header (another table's, or none): its
      // own column must be the X.
      size_t self = cols.size();
      for (size_t k = 0; k < cols.size(); ++k) {
        if (cols[k] == dev) self = k;
      }
      if (cells.size() > cols.size() || self >= cells.size() || cells[self] != "X") continue;
      for (size_t k = 0; k < cells.size(); ++k) m.link[std::string(dev)][cols[k]] = cells[k];
      if (m.rows.size() < 2) m.rows.push_back(v.evidence);
    }
    if (const KeyedValues* nics = nic_fact >= 0 ? sub.keyed.Find(nic_fact) : nullptr) {
      for (const auto& [k, v] : *nics) m.nic_name[std::string(k)] = v.value;
    }
    if (!m.link.empty()) out.push_back(std::move(m));
  }
  return out;
}

// Whether any process of the job set NCCL variable `var` (a user's choice), to
// `value` where one is given.
bool EnvSet(const JobState& state, std::string_view var, std::string_view value = {}) {
  const int env = state.rules().fact(Fact::kEnv);
  if (env < 0) return false;
  for (int s : state.LiveSubjects()) {
    const KeyedValues* m = state.subjects()[s].keyed.Find(env);
    if (!m) continue;
    auto it = m->find(var);
    if (it != m->end() && (value.empty() || it->second.value == value)) return true;
  }
  return false;
}

std::string OnHost(const std::string& host) { return host.empty() ? "" : " of " + host; }

}  // namespace

namespace {

// One finding of `c` over every host whose matrix gives items (at most `most`
// listed per host): "items of host; items of another host".
template <typename ItemsOf>
void EmitPerMatrix(const Checks& x, const CompiledCorrelation& c, size_t most, ItemsOf items_of) {
  std::vector<std::string> hosts;
  std::vector<Evidence> ev;
  std::string value;
  for (const Matrix& m : ReadMatrices(x.state)) {
    const std::vector<std::string> items = items_of(m);
    if (items.empty()) continue;
    std::string list;
    for (size_t i = 0; i < items.size() && i < most; ++i) list += (list.empty() ? "" : ", ") + items[i];
    if (items.size() > most) list += fmt::format(" and {} more", items.size() - most);
    value += (value.empty() ? "" : "; ") + list + OnHost(m.host);
    if (!m.host.empty()) hosts.push_back(m.host);
    ev.insert(ev.end(), m.rows.begin(), m.rows.end());
  }
  if (!value.empty()) x.Emit(c, {}, {}, Vars{{"value", value}}, "topology", ev, &hosts);
}

}  // namespace

void Checks::TopoGdrDistance(const CompiledCorrelation& c) const {
  if (EnvSet(state, "NCCL_NET_GDR_LEVEL")) return;  // the user moved the limit
  EmitPerMatrix(*this, c, 64, [](const Matrix& m) {
    std::vector<std::string> far;
    for (const auto& [row, links] : m.link) {
      if (!IsGpu(row)) continue;
      int best = -1;
      std::string nearest;
      for (const auto& [col, word] : links) {
        if (IsGpu(col) || col == row) continue;
        const int r = LinkRank(word);
        if (r > 0 && (best < 0 || r < best)) {
          best = r;
          nearest = col;
        }
      }
      if (best > kPxb) {
        auto name = m.nic_name.find(nearest);
        far.push_back(fmt::format("{} ({} to {}{})", row, links.at(nearest), nearest,
                                  name == m.nic_name.end() ? "" : " " + name->second));
      }
    }
    return far;
  });
}

void Checks::TopoP2pPath(const CompiledCorrelation& c) const {
  if (EnvSet(state, "NCCL_P2P_LEVEL") || EnvSet(state, "NCCL_P2P_DISABLE")) return;
  EmitPerMatrix(*this, c, 8, [](const Matrix& m) {
    std::vector<std::string> pairs;
    for (const auto& [row, links] : m.link) {
      if (!IsGpu(row)) continue;
      for (const auto& [col, word] : links) {
        if (IsGpu(col) && col > row && LinkRank(word) > kPxb) pairs.push_back(fmt::format("{}-{} {}", row, col, word));
      }
    }
    return pairs;
  });
}

// shm_despite_nvlink: a host whose ranks connect only through SHM (no P2P
// channel at all) while a tool shows NVLink up between its GPUs. A tool's
// output without a host counts for a job on one host.
void Checks::ShmDespiteNvlink(const CompiledCorrelation& c) const {
  const int nvlink = state.rules().fact(Fact::kNvlinkUp), intra = state.rules().fact(Fact::kIntraTransport);
  if (nvlink < 0 || intra < 0) return;
  std::map<std::string, std::pair<bool, bool>> transports;  // host -> (SHM, P2P)
  std::map<std::string, const FactValue*> shm_line;
  // Per host ("" for a tool's output without one): what shows NVLink up, and
  // where. nvidia-smi nvlink -s first, then topo -m's NV# cells between GPUs.
  std::map<std::string, std::pair<std::string, Evidence>> proof;
  for (int s : state.LiveSubjects()) {
    const Subject& sub = state.subjects()[s];
    if (const FactValue* v = sub.Get(nvlink)) proof.try_emplace(sub.host, v->value, v->evidence);
    const FactValue* in = sub.Get(intra);
    if (!in || sub.host.empty()) continue;
    auto& t = transports[sub.host];
    for (const std::string& x : in->values.empty() ? std::vector<std::string>{in->value} : in->values) {
      if (x == "SHM") {
        t.first = true;
        shm_line.try_emplace(sub.host, in);
      }
      if (x == "P2P") t.second = true;
    }
  }
  for (const Matrix& m : ReadMatrices(state)) {
    for (const auto& [row, links] : m.link) {
      for (const auto& [col, word] : links) {
        if (IsGpu(row) && IsGpu(col) && LinkRank(word) == 1 && !m.rows.empty())
          proof.try_emplace(m.host, "nvidia-smi topo -m (" + word + " between " + row + " and " + col + ")", m.rows[0]);
      }
    }
  }
  std::vector<std::string> hosts;
  std::vector<Evidence> ev;
  std::string source;
  for (const auto& [host, t] : transports) {
    if (!t.first || t.second) continue;
    auto p = proof.find(host);
    if (p == proof.end() && transports.size() == 1) p = proof.find("");
    if (p == proof.end()) continue;
    hosts.push_back(host);
    if (source.empty()) source = p->second.first;
    ev.push_back(shm_line[host]->evidence);
    ev.push_back(p->second.second);
  }
  if (hosts.empty()) return;
  Emit(c, {}, {}, Vars{{"value", "via SHM, no P2P channel"}, {"source", source}}, "topology", ev, &hosts);
}

// duplicate_gpu: the communicator init lines of two processes on one host name
// the same GPU (busId) for two ranks of one communicator. NCCL refuses it
// ("Duplicate GPU detected", ncclInvalidUsage) where it checks; an excerpt may
// hold only the init lines, and older releases hang instead.
void Checks::DuplicateGpu(const CompiledCorrelation& c) const {
  const int bus = state.rules().fact(Fact::kGpuBus);
  if (bus < 0) return;
  if (EnvSet(state, "NCCL_MULTI_RANK_GPU_ENABLE", "1")) return;  // sharing a GPU on purpose (NCCL 2.30+)
  for (const auto& [id, comm] : state.comms()) {
    // (host, busId) -> the live subjects whose init line names it.
    std::map<std::pair<std::string, std::string>, std::set<int>> users;
    for (int s : comm.subjects) {
      const int live = state.LiveSubject(s);
      const Subject& sub = state.subjects()[live];
      const FactValue* v = sub.Get(bus);
      if (v && !sub.host.empty() && sub.rank >= 0) users[{sub.host, v->value}].insert(live);
    }
    for (const auto& [where, subs] : users) {
      std::set<int> ranks;
      std::set<int64_t> pids;
      std::vector<Evidence> ev;
      for (int s : subs) {
        const Subject& sub = state.subjects()[s];
        ranks.insert(sub.rank);
        if (sub.pid >= 0) pids.insert(sub.pid);
        if (ev.size() < kMaxEvidencePerFinding) ev.push_back(sub.Get(bus)->evidence);
      }
      // One process driving one GPU under two ranks is not two processes.
      if (ranks.size() < 2 || pids.size() < 2) continue;
      const std::vector<std::string> hosts{where.first};
      Emit(c, std::vector<int>(ranks.begin(), ranks.end()), {},
           Vars{{"value", where.second}, {"group", "communicator " + id}}, "duplicate GPU", ev, &hosts);
    }
  }
}

}  // namespace ncclscan
