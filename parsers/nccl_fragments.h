// NCCL messages that lost their "host:pid:tid [dev] NCCL LEVEL" header: lines
// quoted in issues and chat, where people paste the interesting part only, and
// lists that a mail client or a maintainer re-wrapped one item per line.
//
// They are recognised by the shape of NCCL's own messages, never by their text
// alone: "INFO NET/Socket : Using …" (a level word and a subsystem opening),
// "9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA" (a channel connection),
// and "[12]veth6163fba:fe80::…<0>" continuing the "Using" interface list of the
// line before it (the item indices must go on where that list stopped).
//
// Thread-safety: free functions over their arguments; no state.
#ifndef NCCLSCAN_PARSERS_NCCL_FRAGMENTS_H_
#define NCCLSCAN_PARSERS_NCCL_FRAGMENTS_H_

#include <string_view>

#include "parsers/parsed_line.h"

namespace ncclscan {

// A connection of a channel message, "Channel 02/0 : 11[3] -> 3[3] [receive] via
// NET/IB/1/GDRDMA", 2.4-era "Ring 00 : 6 -> 2 [receive] via NET/IB/0", or the
// bare "11[3] -> 3[3] [receive] via NET/IB/1" of a pasted fragment.
struct ChannelConnection {
  int from = -1;
  int to = -1;
  // The rank that printed the line: NCCL logs a [receive] connection on the
  // receiving rank ("peer -> me") and every other one on the sender ("me -> peer").
  int logged_by = -1;
  bool out_of_range = false;  // a rank did not fit (kMaxRanks): from/to are -1
};
// Whether `m` is a whole channel connection message as above (the "via" part
// names a transport). Ranks of kMaxRanks or more set out_of_range.
bool ParseChannelConnection(std::string_view m, ChannelConnection* c);

// A line with no NCCL header that is still an NCCL message by its shape:
//   "INFO NET/Socket : Using [0]eth0:10.1.2.3<0>" (level word, subsystem)
//   "WARN NET/IB : Got completion from peer …"
//   "9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA" (a channel connection)
// On success sets family (nccl), level and message, and, for a connection when
// no wrapper named a rank, the rank that printed it as line->rank_hint. That is
// a rank of the line's communicator, the global rank only in the world
// communicator; a pasted fragment has nothing better (lines with a header or a
// "[rankN]:" prefix are placed by those instead).
bool ParseHeaderlessNccl(ParsedLine* line);

// "Using" interface lists: NCCL prints "NET/Socket : Using [0]eth0:10.1.2.3<0> [1]…",
// "NET/IB : Using [0]mlx5_0:1/IB [1]… ; OOB ib0:…" and "Bootstrap : Using [0]…".
// Returns the index the next item of the list would have when `message` ends
// inside such a list (0 after a bare "Using"), or -1.
int OpenInterfaceList(std::string_view message);
// Whether `text` continues an open list whose next item is `next`: one or more
// items "[next]name:addr…" "[next+1]…" separated by blanks, optionally ended by
// "; OOB …" (the IB list's out-of-band interface). Sets *following to the
// index after the last item, or -1 when the text closed the list.
bool ContinuesInterfaceList(std::string_view text, int next, int* following);

// Whether `text` is a line of only interface-list items, whatever their first
// index ("[2]veth0:fe80::1%veth0<0> [3]…"): a line that may continue a list
// opened on an earlier line (ContinuesInterfaceList with that list's index).
bool IsInterfaceListItems(std::string_view text);

}  // namespace ncclscan

#endif  // NCCLSCAN_PARSERS_NCCL_FRAGMENTS_H_
