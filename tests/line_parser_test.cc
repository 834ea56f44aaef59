// Table-driven tests: every line shape and wrapper of docs/formats.md with a
// realistic example each.
#include "parsers/line_parser.h"

#include <gtest/gtest.h>

#include <random>

#include "parsers/path_hints.h"
#include "parsers/pci_address.h"
#include "parsers/text_util.h"
#include "parsers/wrappers.h"

namespace ncclscan {
namespace {

struct Case {
  const char* name;
  std::string raw;
  Family family;
  const char* message;  // expected message (nullptr = don't check)
  const char* host = nullptr;
  int64_t pid = -1;
  int dev = -2;  // -2 = don't check
  int rank_hint = -2;
  int local_rank_hint = -2;
  const char* host_hint = nullptr;
  const char* src_file = nullptr;
  int64_t src_line = -2;
  bool timed = false;
  int pg_rank = -2;
};

class LineParserTable : public ::testing::TestWithParam<Case> {};

TEST_P(LineParserTable, Parses) {
  const Case& c = GetParam();
  LineParser parser;
  Arena arena;
  ParsedLine pl;
  std::string_view rest;
  parser.Parse(c.raw, &arena, &pl, &rest);
  EXPECT_EQ(FamilyName(pl.family), std::string(FamilyName(c.family))) << c.raw;
  if (c.message) {
    EXPECT_EQ(std::string(pl.message), c.message) << c.raw;
  }
  if (c.host) {
    EXPECT_EQ(std::string(pl.host), c.host);
  }
  if (c.pid != -1) {
    EXPECT_EQ(pl.pid, c.pid);
  }
  if (c.dev != -2) {
    EXPECT_EQ(pl.dev, c.dev);
  }
  if (c.rank_hint != -2) {
    EXPECT_EQ(pl.rank_hint, c.rank_hint);
  }
  if (c.local_rank_hint != -2) {
    EXPECT_EQ(pl.local_rank_hint, c.local_rank_hint);
  }
  if (c.host_hint) {
    EXPECT_EQ(std::string(pl.host_hint), c.host_hint);
  }
  if (c.src_file) {
    EXPECT_EQ(std::string(pl.src_file), c.src_file);
  }
  if (c.src_line != -2) {
    EXPECT_EQ(pl.src_line, c.src_line);
  }
  if (c.timed) {
    EXPECT_GE(pl.time, 0) << c.raw;
  }
  if (c.pg_rank != -2) {
    EXPECT_EQ(pl.pg_rank, c.pg_rank);
  }
  EXPECT_TRUE(rest.empty());
}

const char* kInfo = "gpu-a17:48213:48213 [3] NCCL INFO Using network IB";

INSTANTIATE_TEST_SUITE_P(
    Shapes, LineParserTable,
    ::testing::Values(
        // NCCL header shapes.
        Case{"info", kInfo, Family::kNccl, "Using network IB", "gpu-a17", 48213, 3},
        Case{"warn",
             "gpu-a17:48213:48290 [3] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.1.2.4<39275> "
             "failed : Connection refused",
             Family::kNccl, "socketStartConnect: Connect to 10.1.2.4<39275> failed : Connection refused", "gpu-a17",
             48213, 3},
        Case{"warn_230_func",
             "n1:77:91 [0] transport/net_ib.cc:2358 (ncclIbCompletion) NCCL WARN NET/IB: Got completion from peer "
             "10.1.0.9<40312> with status=12",
             Family::kNccl, "NET/IB: Got completion from peer 10.1.0.9<40312> with status=12", "n1", 77, 0},
        Case{"trace", "n1:77:91 [0] 1523.041870 ncclProxyProgress:1203 NCCL TRACE progress", Family::kNccl, "progress",
             "n1", 77, 0},
        Case{"call",
             "n1:77:77 NCCL CALL ncclAllReduce(7f3a2c000000,7f3a2c000000,1048576,7,0,0,0x55d0c1a0e9f0,0x55d0c2b1a000)",
             Family::kNccl, "ncclAllReduce(7f3a2c000000,7f3a2c000000,1048576,7,0,0,0x55d0c1a0e9f0,0x55d0c2b1a000)",
             "n1", 77},
        Case{"timestamp_226",
             "[2025-05-02 14:03:11] gpu-a17:48213:48290 [3] transport/net_ib.cc:2358 NCCL WARN NET/IB: Got completion",
             Family::kNccl, "NET/IB: Got completion", "gpu-a17", 48213, 3, -2, -2, nullptr, nullptr, -2, true},
        Case{"pre24_no_keyword", "node1:1234:1234 [0] INFO NET/IB : Using interface ib0", Family::kNccl,
             "NET/IB : Using interface ib0", "node1", 1234, 0},
        Case{"cut_prefix", "[3] NCCL INFO Channel 00/0 : 3[3] -> 4[4] via P2P/CUMEM/read", Family::kNccl,
             "Channel 00/0 : 3[3] -> 4[4] via P2P/CUMEM/read", nullptr, -1, 3},
        Case{"bare_keyword", "NCCL INFO Using network Socket", Family::kNccl, "Using network Socket"},
        Case{"version_banner", "NCCL version 2.18.1+cuda12.1", Family::kNccl, "NCCL version 2.18.1+cuda12.1"},
        Case{"redacted_host", "<cluster_name>:924:924 [5] NCCL INFO cudaDriverVersion 12010", Family::kNccl,
             "cudaDriverVersion 12010", "<cluster_name>", 924, 5},
        // c10 / glog headers.
        Case{"c10_old", "[E ProcessGroupNCCL.cpp:474] [Rank 1] Watchdog caught collective operation timeout",
             Family::kTorch, "[Rank 1] Watchdog caught collective operation timeout", nullptr, -1, -2, -2, -2, nullptr,
             nullptr, -2, false, 1},
        Case{"c10_ts_rank", "[rank7]:[E126 01:17:58.183429932 ProcessGroupNCCL.cpp:616] [Rank 7] Watchdog caught",
             Family::kTorch, "[Rank 7] Watchdog caught", nullptr, -1, -2, 7, -2, nullptr, nullptr, -2, true, 7},
        Case{
            "pg_guid",
            "[rank3]:[E219 08:58:32.606667496 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 3 Rank 3] Exception detected",
            Family::kTorch, "[PG ID 2 PG GUID 3 Rank 3] Exception detected", nullptr, -1, -2, 3, -2, nullptr, nullptr,
            -2, true, 3},
        Case{"glog", "I0228 14:05:56.114109 1619334 ProcessGroupNCCL.cpp:484] [Rank 3] found async exception",
             Family::kTorch, "[Rank 3] found async exception", nullptr, -1, -2, -2, -2, nullptr, nullptr, -2, true, 3},
        Case{"elastic_glog",
             "E0731 10:50:08.043000 3247964 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
             "local_rank: 1 (pid: 3248030) of binary: /usr/bin/python",
             Family::kElastic, "failed (exitcode: 1) local_rank: 1 (pid: 3248030) of binary: /usr/bin/python"},
        Case{"elastic_stdlib",
             "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 518 closing signal SIGTERM",
             Family::kElastic, "Sending process 518 closing signal SIGTERM"},
        Case{"elastic_21",
             "[2024-07-25 06:36:18,293] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 179 "
             "closing signal SIGTERM",
             Family::kElastic, "Sending process 179 closing signal SIGTERM"},
        Case{"elastic_table", "  exitcode  : -6 (pid: 3437)", Family::kElastic, "  exitcode  : -6 (pid: 3437)"},
        // A timestamp wrapper takes the row's indent with its blank (kubectl --timestamps).
        Case{"elastic_table_timestamped", "2024-05-01T10:00:00.123456Z   rank      : 1 (local_rank: 1)",
             Family::kElastic, "  rank      : 1 (local_rank: 1)", nullptr, -1, -2, -2, -2, nullptr, nullptr, -2, true},
        // A shipper's stamp and its one separator go; the indentation of an
        // inventory block stays (ibstat's port state is read from it).
        Case{"ibstat_port_state_timestamped", "2024-11-22T10:15:32.260Z \t\tState: Down", Family::kOther,
             "\t\tState: Down", nullptr, -1, -2, -2, -2, nullptr, nullptr, -2, true},
        // Padding after the header of an empty glog message ("run.py:793] " + blanks).
        Case{"glog_empty_message_padded", "W1122 13:44:17.609000 1824 torch/distributed/run.py:793]    ",
             Family::kElastic, "", nullptr, -1, -2, -2, -2, nullptr, nullptr, -2, true},
        Case{"traceback",
             "[rank2]: torch.distributed.DistBackendError: NCCL error in: /pytorch/x.cpp:1, unhandled cuda error",
             Family::kTorch,
             "torch.distributed.DistBackendError: NCCL error in: /pytorch/x.cpp:1, unhandled cuda error", nullptr, -1,
             -2, 2},
        Case{"app_output", "step 1200 | loss 2.3141 | lr 3.0e-04", Family::kOther,
             "step 1200 | loss 2.3141 | lr 3.0e-04"},
        // Outer wrappers.
        Case{"grep_H_n", std::string("logs/rank3.log:1207:") + kInfo, Family::kNccl, "Using network IB", "gpu-a17",
             48213, 3, -2, -2, nullptr, "logs/rank3.log", 1207},
        Case{"grep_H", std::string("logs/rank3.log:") + kInfo, Family::kNccl, "Using network IB", "gpu-a17", 48213, 3,
             -2, -2, nullptr, "logs/rank3.log"},
        Case{"grep_n", std::string("1207:") + kInfo, Family::kNccl, "Using network IB", "gpu-a17", 48213, 3, -2, -2,
             nullptr, nullptr, 1207},
        // bash's "script: line N: …" names a script path, which is no grep prefix.
        Case{"bash_script_line",
             "./entrypoint.sh: line 48:    28 Killed                  python3 -m sglang.launch_server", Family::kOther,
             "./entrypoint.sh: line 48:    28 Killed                  python3 -m sglang.launch_server", nullptr, -1, -2,
             -2, -2, nullptr, nullptr},
        // A source location ("file.cpp:123:") is where a program printed from, no grep
        // prefix: NCCL's header cut from a paste, NVSHMEM's error chain, Python's warnings.
        Case{"source_location_nccl_warn",
             "include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on device", Family::kNccl,
             nullptr},
        Case{"source_location_nvshmem",
             "/opt/nvshmem/src/modules/transport/ibgda/ibgda.cpp:2234: NULL value Unable to create ah.", Family::kOther,
             "/opt/nvshmem/src/modules/transport/ibgda/ibgda.cpp:2234: NULL value Unable to create ah."},
        Case{"grep_context", std::string("logs/rank3.log-1208-") + kInfo, Family::kNccl, "Using network IB", "gpu-a17",
             48213, 3, -2, -2, nullptr, "logs/rank3.log", 1208},
        Case{"srun", std::string(" 3: ") + kInfo, Family::kNccl, "Using network IB", "gpu-a17", 48213, 3, 3},
        Case{"srun_het", std::string("P1 12: ") + kInfo, Family::kNccl, "Using network IB", "gpu-a17", -1, -2, 12},
        Case{"mpi", std::string("[1,3]<stdout>:") + kInfo, Family::kNccl, "Using network IB", "gpu-a17", -1, -2, 3},
        Case{"mpi_sagemaker", std::string("[1,mpirank:5,algo-1]<stdout>:") + kInfo, Family::kNccl, "Using network IB",
             nullptr, -1, -2, 5},
        Case{"mpi_ctime", std::string("Thu Jan 23 11:55:50 2025[1,1]<stderr>:") + kInfo, Family::kNccl,
             "Using network IB", nullptr, -1, -2, 1, -2, nullptr, nullptr, -2, true},
        Case{"torchrun", std::string("[default3]:") + kInfo, Family::kNccl, "Using network IB", "gpu-a17", -1, -2, -2,
             3},
        Case{"torchrun_rank",
             "[default3]:[rank11]:[E1122 10:15:32.123456 ProcessGroupNCCL.cpp:616] [Rank 11] Watchdog caught",
             Family::kTorch, "[Rank 11] Watchdog caught", nullptr, -1, -2, 11, 3},
        // A log collector's "host >> " before a header whose host field is empty names the host.
        Case{"collector_arrows", "worker-9 >> :168:1228 [2] NCCL INFO Connected all trees", Family::kNccl,
             "Connected all trees", "worker-9", 168, 2, -2, -2, "worker-9"},
        Case{"collector_arrows_nccl_stamp",
             "worker-9 >> [2025-08-12 01:37:03] :166:1226 [0] misc/socket.cc:484 NCCL WARN socketFinalizeAccept: wrong "
             "magic",
             Family::kNccl, "socketFinalizeAccept: wrong magic", "worker-9", 166, 0},
        // DeepSpeed's pdsh launcher prefixes a worker's lines with its address.
        Case{"pdsh_address",
             "192.168.13.81: [rank19]:[E808 10:31:07.406255799 ProcessGroupNCCL.cpp:1895] [PG ID 1 PG "
             "GUID 1 Rank 19] Process group watchdog thread terminated with exception: CUDA error: unspecified launch "
             "failure",
             Family::kTorch,
             "[PG ID 1 PG GUID 1 Rank 19] Process group watchdog thread terminated with exception: CUDA error: "
             "unspecified launch failure",
             nullptr, -1, -2, 19, -2, "192.168.13.81"},
        Case{"pdsh_not_an_address", "192.168.13: [rank19]: hello", Family::kOther, "192.168.13: [rank19]: hello"},
        // DeepSpeed's launcher and runtime log through Python logging ("[time] [LEVEL] [file:line:func]"):
        // pdsh's host in front of it is the node.
        Case{"pdsh_deepspeed_logger",
             "worker-2: [2024-03-01 10:00:05,000] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 5678",
             Family::kOther, nullptr, nullptr, -1, -2, -2, -2, "worker-2"},
        Case{"pdsh_unknown_level_kept", "worker-2: [2024-03-01 10:00:05,000] [NOTE] x", Family::kOther,
             "worker-2: [2024-03-01 10:00:05,000] [NOTE] x"},
        Case{"arrows_in_text_kept", "gpu-7 >> step 10 loss 2.3", Family::kOther, "gpu-7 >> step 10 loss 2.3"},
        Case{"pdsh", std::string("gpu-b03: ") + kInfo, Family::kNccl, "Using network IB", "gpu-a17", -1, -2, -2, -2,
             "gpu-b03"},
        Case{"ray",
             "(RayWorkerWrapper pid=270291, ip=10.175.94.190) [rank3]:[E219 08:58:32.606233339 "
             "ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught",
             Family::kTorch, "[Rank 3] Watchdog caught", nullptr, -1, -2, 3, -2, "10.175.94.190"},
        Case{"ray_nested", std::string("(pid=123) (Worker pid=456) ") + kInfo, Family::kNccl, "Using network IB",
             "gpu-a17"},
        // vLLM's worker processes name their global rank.
        Case{"vllm_worker", std::string("(VllmWorker rank=2 pid=55723) ") + kInfo, Family::kNccl, "Using network IB",
             "gpu-a17", -1, -2, 2},
        // vLLM 0.11+'s "(Worker_TP11 pid=113)" (tensor parallelism alone: the rank) and its logger's
        // "ERROR 08-10 23:02:36 [file.py:898] " header (time kept, no year).
        Case{"vllm_worker_tp_logger",
             "(Worker_TP11 pid=113) ERROR 08-10 23:02:36 [multiproc_executor.py:898] zmq.error.ZMQError: Address "
             "already in use",
             Family::kOther, "zmq.error.ZMQError: Address already in use", nullptr, -1, -2, 11, -2, nullptr, nullptr,
             -2, true},
        Case{"vllm_worker_pp_tp_not_a_rank", "(Worker_PP1_TP3 pid=113) INFO 08-10 23:02:36 [core.py:1] ready",
             Family::kOther, "ready", nullptr, -1, -2, -1, -2, nullptr, nullptr, -2, true},
        // An indented paste: the indent goes where a header or a wrapper follows
        // it, and stays where nothing does (nvidia-smi's and ibstat's rows).
        Case{"indented_nccl_header", std::string("    ") + kInfo, Family::kNccl, "Using network IB", "gpu-a17"},
        Case{"indented_rank_prefix",
             "\t[rank3]:[E816 01:45:40.212150935 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective",
             Family::kTorch, nullptr, nullptr, -1, -2, 3, -2, nullptr, nullptr, -2, true},
        Case{"indent_kept_before_plain_text", "\t\tState: Down", Family::kOther, "\t\tState: Down"},
        Case{"vllm_worker_no_number", std::string("(VllmWorker rank=2x pid=55723) ") + kInfo, Family::kNccl,
             "Using network IB", "gpu-a17", -1, -2, -1},
        Case{"skypilot_node_rank", std::string("(worker1, rank=1, pid=4888, ip=10.60.0.4) ") + kInfo, Family::kNccl,
             "Using network IB", "gpu-a17", -1, -2, -1, -2, "10.60.0.4"},
        // Ray's log deduplication ends a line many workers printed with its count.
        Case{"ray_dedup_suffix",
             std::string("(RayTrainWorker pid=954, ip=10.67.1.2) ") + kInfo + " [repeated 15x across cluster]",
             Family::kNccl, "Using network IB", "gpu-a17", -1, -2, -2, -2, "10.67.1.2"},
        Case{"ray_dedup_suffix_bare", std::string(kInfo) + " [repeated 3x across cluster]", Family::kNccl,
             "Using network IB", "gpu-a17"},
        Case{"ray_dedup_lookalike_kept", std::string(kInfo) + " [repeated x across cluster]", Family::kNccl,
             "Using network IB [repeated x across cluster]", "gpu-a17"},
        Case{"iso_shipper", std::string("2024-11-22T10:15:32.123Z ") + kInfo, Family::kNccl, "Using network IB",
             "gpu-a17", -1, -2, -2, -2, nullptr, nullptr, -2, true},
        Case{"syslog", std::string("Nov 22 10:15:32 gpu-a17 python[123]: ") + kInfo, Family::kNccl, "Using network IB",
             "gpu-a17", -1, -2, -2, -2, "gpu-a17", nullptr, -2, true},
        Case{"cri", std::string("2024-11-22T10:15:32.123456789Z stdout F ") + kInfo, Family::kNccl, "Using network IB",
             "gpu-a17"},
        // Kernel logs: dmesg, dmesg -T, dmesg -H, journalctl -k (short, short-iso,
        // short-monotonic), a shipper's "host: kern: level: [time]: ".
        Case{"dmesg",
             "[ 9912.200001] NVRM: Xid (PCI:0000:3b:00): 79, pid=5103, name=python, GPU has fallen off the bus.",
             Family::kOther, "NVRM: Xid (PCI:0000:3b:00): 79, pid=5103, name=python, GPU has fallen off the bus."},
        Case{"dmesg_T", "[Fri Nov 22 10:15:31 2024] Out of memory: Killed process 5103 (python)", Family::kOther,
             "Out of memory: Killed process 5103 (python)", nullptr, -1, -2, -2, -2, nullptr, nullptr, -2, true},
        Case{"dmesg_H", "[  +0.000316] pcieport 0000:00:03.0: AER: Corrected error received: 0000:00:03.0",
             Family::kOther, "pcieport 0000:00:03.0: AER: Corrected error received: 0000:00:03.0"},
        Case{"journal", "Nov 22 10:15:31 gpu-node-7 kernel: NVRM: Xid (PCI:0000:1b:00): 48, pid='<unknown>'",
             Family::kOther, "NVRM: Xid (PCI:0000:1b:00): 48, pid='<unknown>'", nullptr, -1, -2, -2, -2, "gpu-node-7",
             nullptr, -2, true},
        Case{"journal_iso", "2024-11-22T10:15:31+0000 gpu-node-7 kernel: mlx5_core 0000:0c:00.0 ibp12s0: Link down",
             Family::kOther, "mlx5_core 0000:0c:00.0 ibp12s0: Link down", nullptr, -1, -2, -2, -2, "gpu-node-7",
             nullptr, -2, true},
        Case{"journal_monotonic", "[ 9912.200001] gpu-node-7 kernel: Out of memory: Killed process 5103 (python)",
             Family::kOther, "Out of memory: Killed process 5103 (python)", nullptr, -1, -2, -2, -2, "gpu-node-7"},
        Case{"syslog_dmesg", "Nov 22 10:15:31 gpu-node-7 kernel: [ 9912.200001] NVRM: GPU at PCI:0000:3b:00: x",
             Family::kOther, "NVRM: GPU at PCI:0000:3b:00: x", nullptr, -1, -2, -2, -2, "gpu-node-7", nullptr, -2,
             true},
        Case{"kern_facility",
             "192.168.11.119: kern:     err: [2026-04-22T21:25:20.466440686Z]: NVRM: Xid (PCI:0000:48:00): 62, 0",
             Family::kOther, "NVRM: Xid (PCI:0000:48:00): 62, 0", nullptr, -1, -2, -2, -2, "192.168.11.119", nullptr,
             -2, true},
        // Brackets that are no kernel stamp: a number, a version.
        Case{"not_dmesg", "[1.5] done", Family::kOther, "[1.5] done"},
        Case{"not_dmesg_T", "[Fri Nov 22 10:15:31] done", Family::kOther, "[Fri Nov 22 10:15:31] done"},
        Case{"kubectl", std::string("[pod/trainer-worker-3/pytorch] ") + kInfo, Family::kNccl, "Using network IB",
             "gpu-a17", -1, -2, -2, -2, "trainer-worker-3"},
        Case{"kubectl_ts", std::string("[pod/trainer-worker-3/pytorch] 2024-11-22T10:15:32.123456789Z ") + kInfo,
             Family::kNccl, "Using network IB", "gpu-a17", -1, -2, -2, -2, "trainer-worker-3", nullptr, -2, true},
        Case{
            "docker",
            R"({"log":"gpu-a17:48213:48290 [3] NCCL INFO Using network IB\n","stream":"stdout","time":"2024-11-22T10:15:32.123456789Z"})",
            Family::kNccl, "Using network IB", "gpu-a17", 48213, 3, -2, -2, nullptr, nullptr, -2, true},
        Case{"docker_escaped",
             R"({"log":"[rank1]:[E ProcessGroupNCCL.cpp:1] \"quoted\" \u001b[31mred\u001b[0m\n","stream":"stderr"})",
             Family::kTorch, "\"quoted\" red", nullptr, -1, -2, 1},
        Case{"ansi", std::string("\x1b[36m") + kInfo + "\x1b[0m", Family::kNccl, "Using network IB", "gpu-a17"},
        Case{"ansi_lost_esc", std::string("[36m(RayWorkerWrapper pid=1, ip=10.0.0.1)[0m ") + kInfo, Family::kNccl,
             "Using network IB", "gpu-a17"},
        Case{"crlf", std::string(kInfo) + "\r", Family::kNccl, "Using network IB", "gpu-a17"},
        Case{"tqdm_cr", std::string("  5%|##   | 10/200\r") + kInfo, Family::kNccl, "Using network IB", "gpu-a17"},
        Case{"markdown", std::string("> ") + kInfo, Family::kNccl, "Using network IB", "gpu-a17"},
        Case{"kaggle", "704.7s\t1461\ttorch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
             Family::kElastic, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"},
        Case{"tool_lineno", std::string("[1830] ") + kInfo, Family::kNccl, "Using network IB", "gpu-a17"},
        Case{"cloud_logging",
             "ERROR 2025-04-05T00:01:19.509514570Z torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
             Family::kElastic, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", nullptr, -1, -2,
             -2, -2, nullptr, nullptr, -2, /*timed=*/true},
        Case{"determined_worker",
             "[2024-03-01T10:00:00.000001Z] 0a1b2c3d [rank=5] || "
             "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
             Family::kElastic, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", nullptr, -1, -2, 5,
             -2, nullptr, nullptr, -2, /*timed=*/true},
        Case{"determined_agent",
             "[2024-03-01T10:00:00Z] 0a1b2c3d || torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
             Family::kElastic, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", nullptr, -1, -2,
             -1, -2, nullptr, nullptr, -2, /*timed=*/true},
        Case{"shipper_severity", "INFO 2025-04-05 00:01:19 torch.distributed.DistBackendError: NCCL error",
             Family::kTorch, "torch.distributed.DistBackendError: NCCL error", nullptr, -1, -2, -2, -2, nullptr,
             nullptr, -2, /*timed=*/true},
        Case{"stacked", std::string("logs/all.log:12: 3: [default3]:") + kInfo, Family::kNccl, "Using network IB",
             "gpu-a17", -1, -2, 3, 3, nullptr, "logs/all.log", 12}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

// Crash handlers name their process: the line belongs to host:pid.
TEST(LineParser, CrashHandlerPrefixNamesTheProcess) {
  struct Case {
    const char* raw;
    const char* host;
    int64_t pid;
  };
  for (const Case& c :
       {Case{"[gpu-7:4242:0:4299] Caught signal 11 (Segmentation fault: address not mapped)", "gpu-7", 4242},
        Case{"[node11:265  :0:4597] Caught signal 11 (Segmentation fault)", "node11", 265},
        Case{"[c11n14.cluster:2435872] *** Process received signal ***", "c11n14.cluster", 2435872},
        Case{"[rank3]: Traceback (most recent call last):", "", -1}, Case{"[12:34] step 5", "", -1},
        Case{"[12:34:56] step 5", "", -1}, Case{"[host:12:3] no tid close", "", -1},
        Case{"[2024-01-01 10:00:00] INFO x", "", -1}}) {
    LineParser parser;
    Arena arena;
    ParsedLine pl;
    std::string_view rest;
    parser.Parse(c.raw, &arena, &pl, &rest);
    EXPECT_EQ(pl.host, c.host) << c.raw;
    EXPECT_EQ(pl.pid, c.pid) << c.raw;
  }
}

TEST(LineParser, SplitsTwoGluedNcclLines) {
  LineParser parser;
  Arena arena;
  ParsedLine a, b;
  std::string_view rest, rest2;
  std::string raw = "n1:1:1 [0] NCCL INFO Using network IB n2:2:2 [1] NCCL INFO Using network Socket";
  parser.Parse(raw, &arena, &a, &rest);
  EXPECT_EQ(a.message, "Using network IB");
  ASSERT_FALSE(rest.empty());
  parser.Parse(rest, &arena, &b, &rest2);
  EXPECT_EQ(b.host, "n2");
  EXPECT_EQ(b.message, "Using network Socket");
  EXPECT_TRUE(rest2.empty());
}

// The second line of one process reuses the first's header parse
// (ParseRepeatedHeader); Ray's dedup suffix is dropped on that path too.
TEST(LineParser, RayRepeatSuffixIsDroppedAfterARepeatedHeader) {
  LineParser parser;
  Arena arena;
  ParsedLine a, b;
  std::string_view rest;
  parser.Parse("h1:1:1 [0] NCCL INFO NET/IB : No device found.", &arena, &a, &rest);
  parser.Parse("h1:1:1 [0] NCCL INFO Using network Socket [repeated 15x across cluster]", &arena, &b, &rest);
  EXPECT_EQ(b.message, "Using network Socket");
  EXPECT_EQ(b.text, "h1:1:1 [0] NCCL INFO Using network Socket");
  EXPECT_EQ(b.host, "h1");
}

// Glued without a blank, the second line starts at its host name: the end of
// the first ("...<0>") is neither a host nor a process of its own; a redaction
// placeholder host ("<cluster_name>") is kept whole.
TEST(LineParser, GluedWithoutABlankSplitsAtTheHostName) {
  LineParser parser;
  Arena arena;
  ParsedLine a, b, c, d;
  std::string_view rest, rest2;
  std::string raw = "h1:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>h1:1:1 [0] NCCL INFO Using network IB";
  parser.Parse(raw, &arena, &a, &rest);
  EXPECT_EQ(a.message, "Bootstrap : Using eth0:10.0.0.1<0>");
  ASSERT_EQ(rest, "h1:1:1 [0] NCCL INFO Using network IB");
  parser.Parse(rest, &arena, &b, &rest2);
  EXPECT_EQ(b.host, "h1");
  std::string_view r3;
  parser.Parse("x<1>h2:7:8 [0] NCCL INFO Using network IB", &arena, &c, &r3);
  EXPECT_EQ(c.host, "h2");
  EXPECT_EQ(c.pid, 7);
  parser.Parse("<cluster_name>:7:8 [0] NCCL INFO Using network IB", &arena, &d, &r3);
  EXPECT_EQ(d.host, "<cluster_name>");
}

// A progress bar redrawn without a newline, then another rank's line: the
// second "[defaultN]:" prefix starts a piece of its own.
TEST(LineParser, AnotherRanksLineGluedAfterAProgressBarIsAPieceOfItsOwn) {
  LineParser parser;
  Arena arena;
  std::vector<std::pair<int, std::string>> pieces;
  parser.ParseEach(
      "[default0]:Grouping texts:   8%| 726000/9672101 [02:32<30:38, 4866.01 examples/s][default2]:[E "
      "ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600888 "
      "milliseconds before timing out.",
      &arena, [&](ParsedLine& pl, int) { pieces.emplace_back(pl.local_rank_hint, std::string(pl.text)); });
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].first, 0);
  EXPECT_EQ(pieces[1].first, 2);
  EXPECT_EQ(pieces[1].second.rfind("[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught", 0), 0u) << pieces[1].second;
  EXPECT_EQ(GluedRankPrefix("[rank1]:[E1122 x] [Rank 1] text [rank] no number [default1]: other kind"), 0u);
}

// Regression: ParseEach reported an empty physical line as one "other" line,
// which changed the per-family counts.
TEST(LineParser, ParseEachSkipsEmptyLinesAndInheritsHintsAcrossGluedPieces) {
  LineParser parser;
  Arena arena;
  int calls = 0;
  parser.ParseEach("", &arena, [&](ParsedLine&, int) { ++calls; });
  EXPECT_EQ(calls, 0);
  std::vector<std::pair<std::string, int>> got;
  parser.ParseEach("[rank3]:n1:1:1 [0] NCCL INFO Using network IB n2:2:2 [1] NCCL INFO Using network Socket", &arena,
                   [&](ParsedLine& pl, int piece) {
                     got.emplace_back(std::string(pl.message), pl.rank_hint);
                     EXPECT_EQ(piece, static_cast<int>(got.size()) - 1);
                   });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::make_pair(std::string("Using network IB"), 3));
  EXPECT_EQ(got[1], std::make_pair(std::string("Using network Socket"), 3));
}

// The forward fast path for "host:pid:tid [dev] NCCL LEVEL" must agree with the
// general backwards parse, which a leading blank forces.
TEST(LineParser, BareHeaderFastPathAgreesWithGeneralParse) {
  const std::vector<std::string> lines = {
      "gpu-a17:48213:48213 [3] NCCL INFO AllReduce: opCount 2f sendbuff 0x7f comm 0x55 [nranks=16] stream 0x55",
      "n1:77:77 NCCL CALL ncclAllReduce(7f3a2c000000,7f3a2c000000,1048576,7,0,0,0x55d0,0x55d0)",
      "n1:77:78 [0] NCCL WARN Cuda failure 'out of memory'",
      "n1:77:78 [0] NCCL TRACE 1523.041870 ncclProxyProgress:1 x",
      "n1:77:78 [0] NCCL ABORT",
      "n1:77:78 [0] NCCL ABORT x",
      "n1:77:78 [12345] NCCL INFO x NCCL INFO y",
      "n1:77:78 [0] NCCL INFO Using network IB n2:2:2 [1] NCCL INFO Using network Socket",
      "n1:99999999999999999999:1 [0] NCCL INFO huge pid",
      "n1:1:99999999999999999 [0] NCCL INFO huge tid",
      "n1:1:2 [99999999999] NCCL INFO huge dev",
      "n1:1:2 [] NCCL INFO empty dev",
      "n1:1:2 [0]NCCL INFO no blank",
      "n1:1:2  [0] NCCL INFO two blanks",
      "n1:1:2 [0] NCCL  INFO two blanks",
      "n1:1:2 [0] NCCL INFOx",
      "n1:1:2 [0] misc/socket.cc:50 NCCL WARN file and line",
      "nccl-host:1:2 [0] NCCL INFO host named nccl",
      "a:b:1:2 [0] NCCL INFO colon in host",
      "n1:1:2 [0] NCCL INFO",
      "n1:1:2 [0] NCCL WARN ",
  };
  for (const std::string& raw : lines) {
    ParsedLine fast, slow;
    std::string_view rest_fast, rest_slow;
    fast.text = raw;
    std::string padded = " " + raw;
    slow.text = padded;
    bool ok_fast = ParseNcclHeader(&fast, &rest_fast);
    bool ok_slow = ParseNcclHeader(&slow, &rest_slow);
    EXPECT_EQ(ok_fast, ok_slow) << raw;
    EXPECT_EQ(fast.host, slow.host) << raw;
    EXPECT_EQ(fast.pid, slow.pid) << raw;
    EXPECT_EQ(fast.tid, slow.tid) << raw;
    EXPECT_EQ(fast.dev, slow.dev) << raw;
    EXPECT_EQ(fast.level, slow.level) << raw;
    EXPECT_EQ(fast.message, slow.message) << raw;
    EXPECT_EQ(fast.src_loc, slow.src_loc) << raw;
    EXPECT_EQ(rest_fast, rest_slow) << raw;
  }
}

TEST(LineParser, BinaryLineIsFlaggedNotMatched) {
  LineParser parser;
  Arena arena;
  ParsedLine pl;
  std::string_view rest;
  std::string raw("\x01\x02\x03\x04\x05\x06\x07\x08garbage\x0e\x0f", 17);
  parser.Parse(raw, &arena, &pl, &rest);
  EXPECT_TRUE(pl.binary);
}

TEST(LineParser, NulBytesAreDroppedSoTheLineStillParses) {
  LineParser parser;
  Arena arena;
  ParsedLine pl;
  std::string_view rest;
  std::string raw = std::string("gpu-a17:1:1 [0] NCCL INFO Using ") + '\0' + "network IB";
  parser.Parse(raw, &arena, &pl, &rest);
  EXPECT_EQ(pl.family, Family::kNccl);
  EXPECT_EQ(pl.message, "Using network IB");
}

// A parser that has seen a clean bare header parses a line that repeats it
// from the remembered fields (ParseRepeatedHeader). Every line must come out as
// a fresh parser gives it: lines that repeat the header exactly, then differ in
// what follows (control bytes before and past byte 256, CR, NUL, ANSI, a glued
// second line, nothing at all), or in the header itself (tid, dev, level,
// wrappers), in random orders.
TEST(LineParser, RepeatedHeaderAgreesWithFreshParse) {
  const std::string h = "gpu-node-007:4242:4242 [3] NCCL INFO ";
  const std::vector<std::string> lines = {
      h + "AllReduce: opCount 2f sendbuff 0x7f comm 0x55 [nranks=16] stream 0x55",
      h + "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
      h,
      h + "x\r",
      h + "progress 10%\rprogress 100% NCCL WARN x",
      h + "with\x01control",
      h + std::string(20, '\x02') + "mostly binary",
      // A header with control bytes, which only an unescaped docker line can
      // have clean: ten of them in a 30-byte line make it binary.
      "{\"log\":\"" +
          [] {
            std::string u;
            for (int i = 0; i < 10; ++i) u += "\\u0001";
            return u;
          }() +
          ":1:1 [0] NCCL INFO x\\n\",\"stream\":\"stderr\"}",
      std::string(10, '\x01') + ":1:1 [0] NCCL INFO x",
      h + std::string(300, 'a') + "\x01late control",
      h + std::string("nul\0byte", 8),
      h + "\x1b[31mred\x1b[0m",
      h + "[0m text",
      h + "Using network IB gpu-node-008:1:1 [0] NCCL INFO Using network Socket",
      "gpu-node-007:4242:4243 [3] NCCL INFO other thread",
      "gpu-node-007:4242:4242 [4] NCCL INFO other device",
      "gpu-node-007:4242:4242 [3] NCCL WARN a warning",
      "gpu-node-007:4242:4242 [3] NCCL INFOx",
      "gpu-node-007:4242:4242 NCCL CALL ncclAllReduce(1,2)",
      "[rank3]:" + h + "wrapped",
      "\x1b[32m" + h + "ansi before the header",
      h.substr(0, h.size() - 1),
      "gpu-node-007:4242:4242 [3] NCCL INFO",
      "gpu-node-007:4242:4242\x01[3] NCCL INFO control in the header",
  };
  auto same = [](const ParsedLine& a, const ParsedLine& b) {
    return a.family == b.family && a.text == b.text && a.message == b.message && a.rank_hint == b.rank_hint &&
           a.local_rank_hint == b.local_rank_hint && a.host_hint == b.host_hint && a.src_file == b.src_file &&
           a.src_line == b.src_line && a.time == b.time && a.level == b.level && a.host == b.host && a.pid == b.pid &&
           a.tid == b.tid && a.dev == b.dev && a.src_loc == b.src_loc && a.severity == b.severity &&
           a.pg_rank == b.pg_rank && a.pg_id == b.pg_id && a.binary == b.binary && a.had_nul == b.had_nul;
  };
  std::mt19937 rng(9);
  LineParser warm;
  Arena arena;
  for (int round = 0; round < 3000; ++round) {
    const std::string& raw = lines[round < static_cast<int>(lines.size()) ? round : rng() % lines.size()];
    ParsedLine a, b;
    std::string_view rest_a, rest_b;
    warm.Parse(raw, &arena, &a, &rest_a);
    LineParser fresh;
    fresh.Parse(raw, &arena, &b, &rest_b);
    ASSERT_TRUE(same(a, b)) << "line '" << raw << "' message '" << a.message << "' vs '" << b.message << "'";
    ASSERT_EQ(rest_a, rest_b) << raw;
  }
}

// Property test: the SIMD substring search agrees with std::string_view::find
// for every needle length, start offset and blank placement.
TEST(TextUtil, FormatSecondsOfYearInvertsSecondsOfYear) {
  struct Case {
    int month, day, hour, minute;
    double second;
    const char* text;
  } cases[] = {{1, 1, 0, 0, 0, "01-01 00:00:00.000"},          {1, 31, 23, 59, 59.5, "01-31 23:59:59.500"},
               {2, 28, 12, 0, 1.25, "02-28 12:00:01.250"},     {3, 1, 0, 0, 0, "03-01 00:00:00.000"},
               {11, 22, 10, 15, 32.123, "11-22 10:15:32.123"}, {12, 31, 23, 59, 59.999, "12-31 23:59:59.999"}};
  for (const Case& c : cases) {
    EXPECT_EQ(FormatSecondsOfYear(SecondsOfYear(c.month, c.day, c.hour, c.minute, c.second)), c.text) << c.text;
  }
}

TEST(TextUtil, FindLiteralAgreesWithFind) {
  std::mt19937 rng(7);
  const std::string alphabet = "ab c:";
  for (int round = 0; round < 40000; ++round) {
    std::string hay, lit;
    size_t hn = rng() % 70, ln = rng() % (round % 2 ? 7 : 21);
    for (size_t i = 0; i < ln; ++i) lit += alphabet[rng() % alphabet.size()];
    // Near misses: the literal with one byte changed, or cut short.
    while (hay.size() < hn) {
      if (ln > 0 && rng() % 4 == 0) {
        std::string near = lit.substr(0, 1 + rng() % ln);
        if (rng() % 2) near[rng() % near.size()] = alphabet[rng() % alphabet.size()];
        hay += near;
      } else {
        hay += alphabet[rng() % alphabet.size()];
      }
    }
    size_t from = rng() % (hn + 2);
    ASSERT_EQ(FindLiteral(hay, lit, from), std::string_view(hay).find(lit, from))
        << "'" << hay << "' '" << lit << "' from " << from;
  }
}

// Property test: the rule gate's folded search never misses an occurrence of
// its atom in any letter case (a prefilter may say yes wrongly, never no), and
// says no where no byte position could hold it with bit 0x20 ignored.
TEST(TextUtil, MayContainFoldedNeverMissesAnyCase) {
  std::mt19937 rng(11);
  const std::string alphabet = "aBAb c:@`";
  auto fold = [](std::string t) {
    for (char& c : t) c = static_cast<char>(c | 0x20);
    return t;
  };
  for (int round = 0; round < 40000; ++round) {
    std::string hay, lit;
    size_t hn = rng() % 70, ln = 1 + rng() % (round % 2 ? 5 : 19);
    for (size_t i = 0; i < ln; ++i) lit += alphabet[rng() % alphabet.size()];
    std::string lower = lit;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    while (hay.size() < hn) {
      if (rng() % 4 == 0) {
        std::string near = lit.substr(0, 1 + rng() % ln);  // the atom in another case, or cut short
        if (rng() % 2) near[rng() % near.size()] = alphabet[rng() % alphabet.size()];
        hay += near;
      } else {
        hay += alphabet[rng() % alphabet.size()];
      }
    }
    std::string lhay = hay;
    for (char& c : lhay) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool present = lhay.find(lower) != std::string::npos;
    const bool maybe = fold(hay).find(fold(lower)) != std::string::npos;
    const bool got = MayContainFolded(hay, lower);
    if (present) {
      ASSERT_TRUE(got) << "'" << hay << "' '" << lower << "'";
    }
    ASSERT_EQ(got, maybe) << "'" << hay << "' '" << lower << "'";
  }
}

// Property test: the vectorised token bounds agree with byte loops (every
// length, position and blank placement, both ends of the string).
TEST(TextUtil, TokenBoundsAgreeWithByteLoops) {
  std::mt19937 rng(5);
  const std::string alphabet = "ab \t:";
  for (int round = 0; round < 40000; ++round) {
    std::string s;
    size_t n = rng() % 70;
    for (size_t i = 0; i < n; ++i) s += alphabet[rng() % (round % 3 ? 3 : alphabet.size())];
    size_t at = rng() % (n + 1);
    size_t e = at, b = at;
    while (e < n && s[e] != ' ' && s[e] != '\t') ++e;
    while (b > 0 && s[b - 1] != ' ' && s[b - 1] != '\t') --b;
    ASSERT_EQ(BlankAt(s, at), e) << "'" << s << "' at " << at;
    ASSERT_EQ(TokenBegin(s, at), b) << "'" << s << "' at " << at;
  }
}

// Property test: the digit-string fast path of CompareNumeric orders like the
// parsed long doubles it replaces (hex and decimal, leading zeros, junk).
TEST(TextUtil, CompareNumericAgreesWithParsedValues) {
  std::mt19937 rng(11);
  const std::string alphabet = "0019afAFx- ";
  auto sign = [](int v) { return (v > 0) - (v < 0); };
  for (int round = 0; round < 20000; ++round) {
    std::string a, b;
    size_t an = rng() % 18, bn = rng() % 18;
    for (size_t i = 0; i < an; ++i) a += alphabet[rng() % (round % 2 ? 8 : alphabet.size())];
    for (size_t i = 0; i < bn; ++i) b += alphabet[rng() % (round % 2 ? 8 : alphabet.size())];
    bool hex = rng() % 2;
    long double x, y;
    bool ok_a = ParseNumber(a, hex, &x), ok_b = ParseNumber(b, hex, &y);
    int want = ok_a && ok_b ? (x < y ? -1 : (x > y ? 1 : 0)) : (ok_a != ok_b ? (ok_a ? 1 : -1) : sign(a.compare(b)));
    ASSERT_EQ(sign(CompareNumeric(a, b, hex)), want) << "'" << a << "' '" << b << "' hex " << hex;
  }
}

// Property test: the vectorised byte scan (32/16-byte steps, an overlapping
// last vector) agrees with the byte-by-byte reference, control-byte count included.
TEST(Wrappers, ScanBytesAgreesWithReference) {
  std::mt19937 rng(3);
  const std::string alphabet = std::string("ab[0m;]\x1b\r\t", 10) + std::string(1, '\0') + "\x01NCL ";
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    size_t n = rng() % 300;
    static const char* kKeywordParts[] = {"NCCL ", "NCCL", "NCC", "NCCLx", " NCCL "};
    while (s.size() < n) {
      if (rng() % 40 == 0)
        s += kKeywordParts[rng() % 5];
      else
        s += alphabet[rng() % alphabet.size()];
    }
    ByteScan a = ScanBytes(s), b = ScanBytesReference(s);
    ASSERT_EQ(a.nul, b.nul) << round;
    ASSERT_EQ(a.cr, b.cr) << round;
    ASSERT_EQ(a.ansi, b.ansi) << round;
    ASSERT_EQ(a.control, b.control) << round;
    ASSERT_EQ(a.nccl_keyword, b.nccl_keyword) << round;
    ASSERT_EQ(a.nccl_keyword, s.find("NCCL ") != std::string::npos) << round;
  }
}

// Regression: huge hour values wrapped to negative ints and produced bogus times.
TEST(Timestamps, RejectOutOfRangeFields) {
  EXPECT_LT(SecondsOfYear(1, 1, -1, 0, 0), 0);
  EXPECT_LT(SecondsOfYear(1, 1, 0, -5, 0), 0);
  EXPECT_LT(SecondsOfYear(1, 1, 0, 0, -1), 0);
  EXPECT_GE(SecondsOfYear(12, 31, 23, 59, 59.5), 0);
}

// The year a timestamp names is kept (reports write ISO 8601 with it); glog's
// and syslog's forms name none.
TEST(Timestamps, YearWhereTheLinePrintsOne) {
  const std::pair<std::string, int> cases[] = {
      {"2024-11-22T10:15:32.123456789Z gpu-a17:48213:48213 [3] NCCL INFO Using network IB", 2024},
      {"[2025-05-02 14:03:11] gpu-a17:48213:48213 [3] NCCL INFO Using network IB", 2025},
      {"[2023-07-25 06:36:18,293] torch.distributed.elastic.agent.server.api: [WARNING] Received Signals.SIGTERM",
       2023},
      {"Thu Jan 23 11:55:50 2025[1,1]<stderr>:gpu-a17:48213:48213 [3] NCCL INFO Using network IB", 2025},
      {R"({"log":"gpu-a17:48213:48290 [3] NCCL INFO Using network IB\n","time":"2022-11-22T10:15:32Z"})", 2022},
      {"[E1122 10:15:32.123456 ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught collective operation timeout", 0},
      {"Nov 22 10:15:32 gpu-a17 python[123]: gpu-a17:48213:48213 [3] NCCL INFO Using network IB", 0},
      {"gpu-a17:48213:48213 [3] NCCL INFO Using network IB", 0},
  };
  for (const auto& [raw, year] : cases) {
    LineParser parser;
    Arena arena;
    ParsedLine pl;
    std::string_view rest;
    parser.Parse(raw, &arena, &pl, &rest);
    EXPECT_EQ(pl.year, year) << raw;
    if (year) {
      EXPECT_GE(pl.time, 0) << raw;
    }
  }
  EXPECT_EQ(FormatTime(SecondsOfYear(11, 22, 10, 15, 32.5), 2024), "2024-11-22T10:15:32.500");
  EXPECT_EQ(FormatTime(SecondsOfYear(11, 22, 10, 15, 32.5), 0), "11-22 10:15:32.500");
}

// The indent every non-blank line of a file's head shares (an indented paste).
TEST(Wrappers, PasteIndentIsTheIndentEveryLineShares) {
  EXPECT_EQ(PasteIndent("    a\n      b\n\n    c\n"), "    ");
  EXPECT_EQ(PasteIndent("\t a\n\t b\n"), "\t ");
  EXPECT_EQ(PasteIndent("    a\n  b\n"), "  ");
  EXPECT_EQ(PasteIndent("    a\nb\n    c\n"), "");  // one line at the margin
  EXPECT_EQ(PasteIndent("    a\n"), "");            // one line tells nothing
  EXPECT_EQ(PasteIndent("    a\n    b"), "");       // the cut last line is not looked at
  EXPECT_EQ(PasteIndent(" \t a\n\t  b\n"), "");     // blanks and tabs differ
  EXPECT_EQ(PasteIndent("==== NVSMI LOG ====\n    GPU 0\n        Link 0: 25 GB/s\n"), "");
}

TEST(PathHints, RankFromFileNames) {
  EXPECT_EQ(ParsePathHints("logs/rank3.log").rank, 3);
  EXPECT_EQ(ParsePathHints("logs/rank_12.txt").rank, 12);
  EXPECT_EQ(ParsePathHints("logs/Rank-7.out.gz").rank, 7);
  EXPECT_EQ(ParsePathHints("logs/frank3.log").rank, -1);
  EXPECT_EQ(ParsePathHints("logs/node0.log").rank, -1);
}

TEST(PathHints, TorchrunLogDir) {
  PathHints h = ParsePathHints("/logs/job42_3a9kq1zq/attempt_1/3/stderr.log");
  EXPECT_EQ(h.local_rank, 3);
  EXPECT_EQ(h.attempt, 1);
  EXPECT_EQ(h.rank, -1);
}

TEST(PathHints, HostOfAKernelLogOrToolOutput) {
  EXPECT_EQ(ParsePathHints("dump/node-7.dmesg.log").host, "node-7");
  EXPECT_EQ(ParsePathHints("dump/cn-234.nvidia-smi.log").host, "cn-234");
  EXPECT_EQ(ParsePathHints("dump/dmesg-gpu01.txt").host, "gpu01");
  EXPECT_EQ(ParsePathHints("dump/dmesg.node7.gz").host, "node7");
  EXPECT_EQ(ParsePathHints("dump/node-7.dmesg.log").pid, -1);
  // A kind alone, or a word that is no host, names none.
  EXPECT_EQ(ParsePathHints("dump/dmesg.log").host, "");
  EXPECT_EQ(ParsePathHints("dump/dmesg-output.txt").host, "");
  EXPECT_EQ(ParsePathHints("dump/rank3.log").host, "");
}

TEST(TextUtil, PciBusNumberReadsEveryToolsSpelling) {
  EXPECT_EQ(PciBusNumber("1b000"), 0x1b000);             // NCCL's busId
  EXPECT_EQ(PciBusNumber("PCI:0000:1b:00"), 0x1b000);    // NVRM's Xid (no function)
  EXPECT_EQ(PciBusNumber("0000:1b:00.0"), 0x1b000);      // lspci -D
  EXPECT_EQ(PciBusNumber("00000000:1B:00.0"), 0x1b000);  // nvidia-smi
  EXPECT_EQ(PciBusNumber("1b:00.1"), 0x1b001);           // lspci, no domain
  EXPECT_EQ(PciBusNumber("0001:1b:00.0"), 0x11b000);     // another domain is another GPU
  EXPECT_NE(PciBusNumber("0000:1c:00.0"), PciBusNumber("1b000"));
  for (const char* bad : {"", "PCI:", "0000:1b", "zz:00.0", "0000:1b:00.9", "0000:100:00.0", "1b.000"}) {
    EXPECT_EQ(PciBusNumber(bad), -1) << bad;
  }
}

TEST(PathHints, NcclDebugFile) {
  PathHints h = ParsePathHints("/logs/nccl.gpu-a17.48213");
  EXPECT_EQ(h.host, "gpu-a17");
  EXPECT_EQ(h.pid, 48213);
}

}  // namespace
}  // namespace ncclscan
