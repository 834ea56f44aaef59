// Markdown escaping: how text from the input (log lines, host and file names,
// versions, values captured into explanations) is written into the markdown
// report so that pasted into a ticket it renders as the text it is, and
// nothing else: no HTML, no links or images, no emphasis, headings or table
// cells it did not ask for, no @-mentions, no code fence closed early, no raw
// controls or bidi overrides.
//
// The scheme (one function per place in the document):
//   prose and table cells  MarkdownText: SanitizeForTerminal first (controls,
//                          bidi, invalid UTF-8 shown as \xNN / \uXXXX; no raw
//                          newline survives), then `<` `>` `&` as the entities
//                          &lt; &gt; &amp;, a backslash before each of
//                          \ ` * _ [ ] # | ~ $ (CommonMark backslash
//                          escapes: the character renders as itself; no
//                          link or image can form without a ']' before
//                          its '(' or a '<' before its URL), and a
//                          zero-width space (U+200B) after an @ that starts a
//                          mention (@channel, @here, @org/team), so that no
//                          renderer or chat bridge notifies anyone. (A bare
//                          http(s):// or www. URL in a log line may still be
//                          autolinked by a GFM renderer, as typed; no other
//                          scheme is, javascript: included.)
//   inline code            MarkdownCodeSpan: sanitized, delimited by one
//                          backtick more than the longest run inside (padded
//                          with spaces when needed), pipes escaped in table
//                          cells (GFM splits cells before code spans).
//   code blocks            MarkdownFence: a backtick fence longer than any
//                          backtick run of the block's (sanitized) lines.
//
// Thread-safety: pure functions.
#ifndef NCCLSCAN_ENGINE_REPORTS_MARKDOWN_ESCAPE_H_
#define NCCLSCAN_ENGINE_REPORTS_MARKDOWN_ESCAPE_H_

#include <string>
#include <string_view>
#include <vector>

namespace ncclscan {

// Text for markdown prose, headings and table cells. At most about max_bytes
// of input are kept (cut between characters, "..." appended).
std::string MarkdownText(std::string_view s, size_t max_bytes = std::string::npos);

// `s` as one inline code span (file names, rule ids, fingerprints).
std::string MarkdownCodeSpan(std::string_view s, bool in_table_cell = false);

// The fence for a fenced code block holding `lines` (already sanitized):
// at least three backticks, and more than the longest run of backticks in them.
std::string MarkdownFence(const std::vector<std::string>& lines);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_REPORTS_MARKDOWN_ESCAPE_H_
