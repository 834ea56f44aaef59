// Internal to parsers/: the header parsers LineParser (line_parser.cc) calls
// in line_parser_nccl.cc and line_parser_torch.cc.
//
// Thread-safety: free functions over their arguments; no state.
#ifndef NCCLSCAN_PARSERS_LINE_PARSER_INTERNAL_H_
#define NCCLSCAN_PARSERS_LINE_PARSER_INTERNAL_H_

#include <cstddef>
#include <string_view>

#include "parsers/parsed_line.h"
#include "parsers/text_util.h"
#include "parsers/wrappers.h"

namespace ncclscan {

inline bool Contains(std::string_view s, std::string_view needle) {
  return FindLiteral(s, needle) != std::string_view::npos;
}

// Two lines glued together: a second "host:pid:tid [dev] NCCL INFO|WARN" inside
// msg. Returns msg without it and sets *rest to it.
std::string_view SplitGlued(std::string_view msg, std::string_view* rest);

// The common shape, parsed forwards: "host:pid:tid [dev] NCCL LEVEL " (or
// without "[dev] ") at the very start; false, leaving *line untouched, for
// anything else.
bool ParseBareNcclHeader(ParsedLine* line, const NcclProcess& np, std::string_view* rest, size_t* header_len);

// The backwards parse from the "NCCL LEVEL" keyword, for every other shape.
bool ParseGeneralNcclHeader(ParsedLine* line, std::string_view* rest);

// "[PG ID 0 PG GUID 0(default_pg) Rank 3] ", "[PG 1 Rank 0] ", "[Rank 3] ".
void ParsePgPrefix(std::string_view msg, ParsedLine* line);

}  // namespace ncclscan

#endif  // NCCLSCAN_PARSERS_LINE_PARSER_INTERNAL_H_
