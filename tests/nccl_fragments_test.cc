// NCCL lines without their header (parsers/nccl_fragments.h): what is read as
// NCCL by its shape, the near misses that stay other lines, and interface lists
// re-wrapped one item per line.
#include "parsers/nccl_fragments.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parsers/line_parser.h"

namespace ncclscan {
namespace {

struct Fragment {
  const char* name;
  const char* raw;
  Family family;
  const char* message;  // nullptr: not checked (other lines)
  NcclLevel level = NcclLevel::kNone;
  int rank_hint = -1;
  bool bad_number = false;
};

// The ctest name shows the raw line rather than the struct's bytes.
void PrintTo(const Fragment& f, std::ostream* os) { *os << "'" << f.raw << "'"; }

class HeaderlessTable : public ::testing::TestWithParam<Fragment> {};

TEST_P(HeaderlessTable, Parses) {
  const Fragment& c = GetParam();
  LineParser parser;
  Arena arena;
  ParsedLine pl;
  std::string_view rest;
  parser.Parse(c.raw, &arena, &pl, &rest);
  EXPECT_EQ(std::string(FamilyName(pl.family)), FamilyName(c.family)) << c.raw;
  if (c.message) {
    EXPECT_EQ(std::string(pl.message), c.message) << c.raw;
  }
  EXPECT_EQ(static_cast<int>(pl.level), static_cast<int>(c.level)) << c.raw;
  EXPECT_EQ(pl.rank_hint, c.rank_hint) << c.raw;
  EXPECT_EQ(pl.bad_number, c.bad_number) << c.raw;
}

INSTANTIATE_TEST_SUITE_P(
    Fragments, HeaderlessTable,
    ::testing::Values(
        // A level word and an NCCL subsystem opening.
        Fragment{"info_socket", "INFO NET/Socket : Using [0]eth0:10.1.2.3<0>", Family::kNccl,
                 "NET/Socket : Using [0]eth0:10.1.2.3<0>", NcclLevel::kInfo},
        Fragment{"info_socket_empty_list", "INFO NET/Socket : Using", Family::kNccl, "NET/Socket : Using",
                 NcclLevel::kInfo},
        Fragment{"warn_ib", "WARN NET/IB: Got completion from peer 10.1.0.9<40312> with status=12", Family::kNccl,
                 "NET/IB: Got completion from peer 10.1.0.9<40312> with status=12", NcclLevel::kWarn},
        Fragment{"info_bootstrap", "INFO Bootstrap : Using ib0:10.0.0.1<0>", Family::kNccl,
                 "Bootstrap : Using ib0:10.0.0.1<0>", NcclLevel::kInfo},
        Fragment{"info_env", "INFO NCCL_SOCKET_IFNAME set by environment to eth0", Family::kNccl,
                 "NCCL_SOCKET_IFNAME set by environment to eth0", NcclLevel::kInfo},
        Fragment{"info_channel", "INFO Channel 00/0 : 9[1a000] -> 2[6b000] [receive] via NET/IB/1", Family::kNccl,
                 "Channel 00/0 : 9[1a000] -> 2[6b000] [receive] via NET/IB/1", NcclLevel::kInfo, 2},
        // Bare channel connections: the rank that logged it is the sender, or
        // the receiver of a [receive] connection.
        Fragment{"fragment_send", "9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA", Family::kNccl,
                 "9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA", NcclLevel::kInfo, 9},
        Fragment{"fragment_receive", "9[1a000] -> 2[6b000] [receive] via NET/IB/1", Family::kNccl,
                 "9[1a000] -> 2[6b000] [receive] via NET/IB/1", NcclLevel::kInfo, 2},
        Fragment{"fragment_p2p", "Channel 00/0 : 3[1] -> 2[0] via P2P/CUMEM", Family::kNccl,
                 "Channel 00/0 : 3[1] -> 2[0] via P2P/CUMEM", NcclLevel::kInfo, 3},
        Fragment{"fragment_ring_24", "Ring 00 : 6 -> 2 [receive] via NET/IB/0", Family::kNccl,
                 "Ring 00 : 6 -> 2 [receive] via NET/IB/0", NcclLevel::kInfo, 2},
        Fragment{"fragment_wrapper_rank_wins", "[rank5]: 9[1a000] -> 2[6b000] [send] via NET/IB/0", Family::kNccl,
                 "9[1a000] -> 2[6b000] [send] via NET/IB/0", NcclLevel::kInfo, 5},
        Fragment{"fragment_rank_too_big", "4294967299[0] -> 2[0] [send] via NET/IB/0", Family::kNccl,
                 "4294967299[0] -> 2[0] [send] via NET/IB/0", NcclLevel::kInfo, -1, true},
        // Near misses: application and Python logging lines stay what they were.
        Fragment{"python_logging_colon", "INFO: NET/Socket : Using [0]eth0:10.1.2.3<0>", Family::kOther, nullptr},
        Fragment{"info_prose", "INFO Network is up on eth0", Family::kOther, nullptr},
        Fragment{"info_bootstrapping", "INFO Bootstrapping cluster state", Family::kOther, nullptr},
        Fragment{"info_net_no_name", "INFO NET/ : Using eth0", Family::kOther, nullptr},
        Fragment{"info_channel_no_number", "INFO Channel news: 3 subscribers", Family::kOther, nullptr},
        Fragment{"info_env_lowercase", "INFO NCCL_thing set to 3", Family::kTorch, nullptr},
        Fragment{"no_level_no_connection", "Using network IB", Family::kOther, nullptr},
        Fragment{"connection_no_via", "9[1a000] -> 2[6b000] [send] NET/IB/0", Family::kOther, nullptr},
        Fragment{"connection_empty_transport", "9[1a000] -> 2[6b000] [send] via ", Family::kOther, nullptr},
        Fragment{"connection_in_prose", "the ring went 3 -> 2 via P2P/IPC before it hung", Family::kOther, nullptr},
        Fragment{"connection_bad_dev", "9[1x000] -> 2[6b000] via P2P/IPC", Family::kOther, nullptr}),
    [](const ::testing::TestParamInfo<Fragment>& p) { return std::string(p.param.name); });

// Parses `lines` in order with one parser; returns each line's family and
// message. *parsed (optional) gets the lines, whose views point into `lines`
// and *arena.
std::vector<std::string> Messages(const std::vector<std::string>& lines, std::vector<ParsedLine>* parsed = nullptr,
                                  Arena* arena = nullptr) {
  LineParser parser;
  Arena own;
  if (arena == nullptr) arena = &own;
  std::vector<std::string> out;
  for (const std::string& l : lines) {
    parser.ParseEach(l, arena, [&](ParsedLine& pl, int) {
      out.push_back(std::string(FamilyName(pl.family)) + "|" + std::string(pl.message));
      if (parsed) parsed->push_back(pl);
    });
  }
  return out;
}

TEST(InterfaceList, RewrappedItemsContinueTheListSoFar) {
  std::vector<ParsedLine> parsed;
  Arena arena;
  const std::vector<std::string> lines = {"INFO NET/Socket : Using", "[0]bond0:192.168.1.161<0>",
                                          "[1]br-05ab815fa14e:172.19.0.1<0>",
                                          "[2]veth6163fba:fe80::b878:6cff:fe52:abe2%veth6163fba<0> "};
  std::vector<std::string> got = Messages(lines, &parsed, &arena);
  std::vector<std::string> want = {"nccl|NET/Socket : Using", "nccl|NET/Socket : Using [0]bond0:192.168.1.161<0>",
                                   "nccl|NET/Socket : Using [0]bond0:192.168.1.161<0> [1]br-05ab815fa14e:172.19.0.1<0>",
                                   "nccl|NET/Socket : Using [0]bond0:192.168.1.161<0> [1]br-05ab815fa14e:172.19.0.1<0> "
                                   "[2]veth6163fba:fe80::b878:6cff:fe52:abe2%veth6163fba<0>"};
  EXPECT_EQ(got, want);
  ASSERT_EQ(parsed.size(), 4u);
  EXPECT_EQ(static_cast<int>(parsed[3].level), static_cast<int>(NcclLevel::kInfo));
}

TEST(InterfaceList, HeaderFieldsOfTheOpeningLineCarryOver) {
  std::vector<ParsedLine> parsed;
  Arena arena;
  const std::vector<std::string> lines = {"gpu-a17:48213:48213 [3] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB",
                                          "[1]mlx5_3:1/IB ; OOB ib0:10.1.0.7<0>", "[2]mlx5_4:1/IB"};
  std::vector<std::string> got = Messages(lines, &parsed, &arena);
  std::vector<std::string> want = {"nccl|NET/IB : Using [0]mlx5_0:1/IB",
                                   "nccl|NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB ; OOB ib0:10.1.0.7<0>",
                                   // "; OOB" ended the list: the next item is no continuation.
                                   "other|[2]mlx5_4:1/IB"};
  EXPECT_EQ(got, want);
  ASSERT_EQ(parsed.size(), 3u);
  EXPECT_EQ(std::string(parsed[1].host), "gpu-a17");
  EXPECT_EQ(parsed[1].pid, 48213);
  EXPECT_EQ(parsed[1].dev, 3);
  EXPECT_EQ(std::string(parsed[1].text),
            "gpu-a17:48213:48213 [3] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB ; OOB ib0:10.1.0.7<0>");
}

TEST(InterfaceList, NearMissesAreNotJoined) {
  // An index that does not go on where the list stopped.
  EXPECT_EQ(Messages({"INFO NET/Socket : Using [0]eth0:10.0.0.1<0>", "[2]eth2:10.0.0.3<0>"}),
            (std::vector<std::string>{"nccl|NET/Socket : Using [0]eth0:10.0.0.1<0>", "other|[2]eth2:10.0.0.3<0>"}));
  // A line in between closes the list.
  EXPECT_EQ(Messages({"INFO NET/Socket : Using [0]eth0:10.0.0.1<0>", "step 1", "[1]eth1:10.0.0.2<0>"}),
            (std::vector<std::string>{"nccl|NET/Socket : Using [0]eth0:10.0.0.1<0>", "other|step 1",
                                      "other|[1]eth1:10.0.0.2<0>"}));
  // Not a list: "Using 2 threads".
  EXPECT_EQ(
      Messages({"n1:7:7 [0] NCCL INFO NET/Socket: Using 2 threads and 8 sockets per thread", "[0]eth0:1<0>"}),
      (std::vector<std::string>{"nccl|NET/Socket: Using 2 threads and 8 sockets per thread", "other|[0]eth0:1<0>"}));
  // Text after the items.
  EXPECT_EQ(Messages({"INFO NET/Socket : Using", "[0]eth0:10.0.0.1<0> is the fastest"}),
            (std::vector<std::string>{"nccl|NET/Socket : Using", "other|[0]eth0:10.0.0.1<0> is the fastest"}));
  // Another process's line (a different wrapper rank) is not this list's.
  EXPECT_EQ(Messages({"[rank0]: INFO NET/Socket : Using [0]eth0:10.0.0.1<0>", "[rank1]: [1]eth1:10.0.0.2<0>"}),
            (std::vector<std::string>{"nccl|NET/Socket : Using [0]eth0:10.0.0.1<0>", "other|[1]eth1:10.0.0.2<0>"}));
}

TEST(InterfaceList, IsBounded) {
  // More items than NCCL ever lists stop being joined (each continuation
  // stores the list so far).
  std::vector<std::string> lines = {"INFO NET/Socket : Using"};
  for (int i = 0; i < LineParser::kMaxListItems + 4; ++i) lines.push_back("[" + std::to_string(i) + "]e:1<0>");
  std::vector<std::string> got = Messages(lines);
  ASSERT_EQ(got.size(), lines.size());
  // got[k] is item k - 1: items 0 .. kMaxListItems - 1 are joined, the next is not.
  EXPECT_EQ(got[LineParser::kMaxListItems].substr(0, 5), "nccl|");
  EXPECT_EQ(got[LineParser::kMaxListItems + 1], "other|[" + std::to_string(LineParser::kMaxListItems) + "]e:1<0>");
}

TEST(InterfaceList, OpenAndContinue) {
  EXPECT_EQ(OpenInterfaceList("NET/Socket : Using"), 0);
  EXPECT_EQ(OpenInterfaceList("NET/Socket : Using [0]eth0:1.2.3.4<0> [1]eth1:1.2.3.5<0>"), 2);
  EXPECT_EQ(OpenInterfaceList("Bootstrap: Using [0]ib1:fe80::1%ib1<0>"), 1);
  EXPECT_EQ(OpenInterfaceList("NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.1.0.7<0>"), -1);
  EXPECT_EQ(OpenInterfaceList("NET/Socket : Using 2 threads"), -1);
  EXPECT_EQ(OpenInterfaceList("NET/Socket : Usingx"), -1);
  EXPECT_EQ(OpenInterfaceList("Using network Socket"), -1);
  int following = -5;
  EXPECT_TRUE(ContinuesInterfaceList("[3]a:1<0> [4]b:2<0>", 3, &following));
  EXPECT_EQ(following, 5);
  EXPECT_TRUE(ContinuesInterfaceList("[3]a:1<0> ; OOB ib0", 3, &following));
  EXPECT_EQ(following, -1);
  EXPECT_FALSE(ContinuesInterfaceList("[4]a:1<0>", 3, &following));
  EXPECT_FALSE(ContinuesInterfaceList("[3]a:1<0>[4]b", 3, &following));
  EXPECT_FALSE(ContinuesInterfaceList("[3]", 3, &following));
  EXPECT_FALSE(ContinuesInterfaceList("; OOB ib0", 3, &following));
  EXPECT_FALSE(ContinuesInterfaceList("[99999999999999999999]a", 3, &following));
}

TEST(ChannelConnection, RanksAndWhoLoggedIt) {
  ChannelConnection c;
  ASSERT_TRUE(ParseChannelConnection("Channel 02/0 : 11[3] -> 3[3] [receive] via NET/IB/1/GDRDMA", &c));
  EXPECT_EQ(c.from, 11);
  EXPECT_EQ(c.to, 3);
  EXPECT_EQ(c.logged_by, 3);
  ASSERT_TRUE(ParseChannelConnection("Channel 02 : 11[3b000] -> 3[3b000] [send] via NET/Socket/0", &c));
  EXPECT_EQ(c.logged_by, 11);
  ASSERT_TRUE(ParseChannelConnection("16777216[0] -> 3[0] via P2P/IPC", &c));
  EXPECT_TRUE(c.out_of_range);
  EXPECT_EQ(c.logged_by, -1);
  EXPECT_FALSE(ParseChannelConnection("Channel 02/0 : 11[3] -> 3[3] [receive]", &c));
  EXPECT_FALSE(ParseChannelConnection("11[3] ->3[3] via P2P/IPC", &c));
}

}  // namespace
}  // namespace ncclscan
