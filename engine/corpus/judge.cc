#include "engine/corpus/judge.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "parsers/sha256.h"
#include "parsers/text_util.h"
#include "rules/vocabulary.h"

namespace ncclscan {

namespace {

// corpus/incidents/README.md: the incident vocabulary, what a run did, and the
// ncclscan rule categories a truth may accept (hang and crash are the run's
// story findings).
const std::set<std::string_view> kIncidentCategories = {"healthy",
                                                        "init_failure",
                                                        "network_iface",
                                                        "socket_fallback",
                                                        "ib_error",
                                                        "roce_config",
                                                        "gdr_missing",
                                                        "gdr_disabled",
                                                        "p2p",
                                                        "p2p_disabled",
                                                        "shm",
                                                        "container",
                                                        "nvls",
                                                        "plugin",
                                                        "version_mismatch",
                                                        "env_mismatch",
                                                        "proto_algo",
                                                        "duplicate_gpu",
                                                        "cuda_error",
                                                        "gpu_fault",
                                                        "oom",
                                                        "watchdog_timeout",
                                                        "timeout_config",
                                                        "divergent_rank",
                                                        "collective_mismatch",
                                                        "hang",
                                                        "crash",
                                                        "remote_crash",
                                                        "connection_closed",
                                                        "app_error",
                                                        "launcher",
                                                        "other"};
const std::set<std::string_view> kRunStatuses = {"healthy", "failed", "hung", "crashed", "incomplete"};
const std::set<std::string_view> kConfidences = {"established", "likely", "unknown"};
const std::set<std::string_view> kRuleCategories = {
    "bootstrap", "config", "connection", "cuda",    "desync",   "elastic",   "env",     "gdr",  "ib",   "identity",
    "init",      "oom",    "p2p",        "timeout", "topology", "transport", "version", "hang", "crash"};
// Statuses that claim nothing either way: no evidence read, or not all of it.

using simdjson::dom::element;

// Reads an array of strings; false when the value is not one.
bool StringArray(element e, std::vector<std::string>* out) {
  simdjson::dom::array arr;
  if (e.get_array().get(arr) != simdjson::SUCCESS) return false;
  for (auto x : arr) {
    std::string_view s;
    if (x.get_string().get(s) != simdjson::SUCCESS) return false;
    out->emplace_back(s);
  }
  return true;
}

bool IsRuleId(std::string_view id) {
  if (id.empty() || !IsAlpha(id[0]) || id[0] > 'Z') return false;
  for (char c : id) {
    if (!(IsDigit(c) || c == '-' || (c >= 'A' && c <= 'Z'))) return false;
  }
  return true;
}

// Each check adds its problem to the list; all are reported at once.
using Problems = std::vector<std::string>;

void ReadVocabulary(element root, const char* key, const std::set<std::string_view>& known,
                    std::vector<std::string>* out, Problems* problems) {
  element e;
  if (root[key].get(e) != simdjson::SUCCESS) return problems->push_back(fmt::format("missing \"{}\"", key));
  if (!StringArray(e, out)) return problems->push_back(fmt::format("\"{}\" is not an array of strings", key));
  for (const auto& v : *out) {
    if (!known.count(v)) problems->push_back(fmt::format("{}: unknown value \"{}\"", key, v));
  }
}

void ReadEnum(element root, const char* key, const std::set<std::string_view>& known, bool required, std::string* out,
              Problems* problems) {
  std::string_view s;
  auto got = root[key].get_string().get(s);
  if (got == simdjson::NO_SUCH_FIELD && !required) return;
  if (got != simdjson::SUCCESS) return problems->push_back(fmt::format("\"{}\" missing or not a string", key));
  *out = std::string(s);
  if (!known.count(s)) problems->push_back(fmt::format("{}: unknown value \"{}\"", key, s));
}

void ReadAccept(element root, Truth* t, Problems* problems) {
  element accept;
  if (root["accept"].get(accept) != simdjson::SUCCESS || !accept.is_object()) {
    return problems->push_back("\"accept\" missing or not an object");
  }
  element e;
  if (accept["categories"].get(e) == simdjson::SUCCESS) {
    ReadVocabulary(accept, "categories", kRuleCategories, &t->accept_categories, problems);
  }
  if (accept["rules"].get(e) == simdjson::SUCCESS) {
    if (!StringArray(e, &t->accept_rules)) problems->push_back("accept.rules is not an array of strings");
    for (const auto& r : t->accept_rules) {
      if (!IsRuleId(r)) problems->push_back("accept.rules: \"" + r + "\" is not a rule id");
    }
  }
}

void ReadCulprit(element root, Truth* t, Problems* problems) {
  element c;
  if (root["culprit"].get(c) != simdjson::SUCCESS) return problems->push_back("missing \"culprit\" (null when none)");
  if (c.is_null()) return;
  if (!c.is_object()) return problems->push_back("\"culprit\" is neither null nor an object");
  t->has_culprit = true;
  simdjson::dom::array ranks;
  if (c["ranks"].get_array().get(ranks) == simdjson::SUCCESS) {
    for (auto r : ranks) {
      int64_t n;
      if (r.get_int64().get(n) != simdjson::SUCCESS || n < 0 || n >= (1 << 24)) {
        problems->push_back("culprit.ranks holds something other than a rank number");
        continue;
      }
      t->culprit_ranks.push_back(static_cast<int>(n));
    }
  }
  element hosts;
  if (c["hosts"].get(hosts) == simdjson::SUCCESS && !StringArray(hosts, &t->culprit_hosts)) {
    problems->push_back("culprit.hosts is not an array of strings");
  }
  if (t->culprit_ranks.empty() && t->culprit_hosts.empty()) {
    problems->push_back("culprit names no rank and no host (write null)");
  }
}

// Rules that hold between fields.
void CheckConsistency(const Truth& t, Problems* problems) {
  const bool accepts = !t.accept_categories.empty() || !t.accept_rules.empty();
  if (t.Healthy() && accepts) problems->push_back("a healthy case accepts no finding (accept must be empty)");
  if (!t.status.empty() && !t.Healthy() && !accepts) {
    problems->push_back("a failing case must accept some category or rule");
  }
  if (t.choice_needed && !t.has_culprit) problems->push_back("choice_needed without a culprit");
}

}  // namespace

bool ParseTruth(std::string_view json, Truth* truth, std::string* err) {
  *truth = Truth();
  simdjson::dom::parser parser;
  element root;
  if (parser.parse(simdjson::padded_string(json)).get(root) != simdjson::SUCCESS || !root.is_object()) {
    *err = "not a JSON object";
    return false;
  }
  Problems problems;
  std::string_view s;
  if (root["source"].get_string().get(s) != simdjson::SUCCESS || s.empty()) {
    problems.push_back("\"source\" missing or empty");
  }
  truth->source = std::string(s);
  ReadEnum(root, "status", kRunStatuses, true, &truth->status, &problems);
  ReadEnum(root, "confidence", kConfidences, false, &truth->confidence, &problems);
  ReadVocabulary(root, "categories", kIncidentCategories, &truth->categories, &problems);
  if (truth->categories.empty()) problems.push_back("\"categories\" is empty");
  ReadAccept(root, truth, &problems);
  ReadCulprit(root, truth, &problems);
  if (root["choice_needed"].get_bool().get(truth->choice_needed) != simdjson::SUCCESS) {
    problems.push_back("\"choice_needed\" missing or not true/false");
  }
  element traps;
  if (root["traps"].get(traps) == simdjson::SUCCESS && !StringArray(traps, &truth->traps)) {
    problems.push_back("\"traps\" is not an array of strings");
  }
  CheckConsistency(*truth, &problems);
  err->clear();
  for (const auto& p : problems) *err += (err->empty() ? "" : "; ") + p;
  return problems.empty();
}

bool ParseRankList(std::string_view compact, std::vector<int>* ranks) {
  ranks->clear();
  std::string_view s = compact;
  while (!s.empty()) {
    int64_t lo, hi;
    if (!ConsumeInt(&s, &lo)) return false;
    hi = lo;
    if (ConsumePrefix(&s, "-") && !ConsumeInt(&s, &hi)) return false;
    if (hi < lo || hi >= (1 << 24)) return false;
    for (int64_t r = lo; r <= hi; ++r) {
      if (ranks->size() == kMaxExpandedRanks) {
        ranks->push_back(-1);  // too many to list: no culprit list can hold them all
        return true;
      }
      ranks->push_back(static_cast<int>(r));
    }
    if (!s.empty() && !ConsumePrefix(&s, ",")) return false;
  }
  return true;
}

namespace {

// The primary finding: the one marked "primary", else the first of the rule
// verdict.primary names (an older schema has no "primary" on findings).
bool FindPrimary(element root, std::string_view primary_rule, element* out) {
  simdjson::dom::array findings;
  if (root["findings"].get_array().get(findings) != simdjson::SUCCESS) return false;
  for (auto f : findings) {
    bool marked = false;
    if (f["primary"].get_bool().get(marked) == simdjson::SUCCESS && marked) {
      *out = f;
      return true;
    }
  }
  for (auto f : findings) {
    std::string_view rule;
    if (!primary_rule.empty() && f["rule"].get_string().get(rule) == simdjson::SUCCESS && rule == primary_rule) {
      *out = f;
      return true;
    }
  }
  return false;
}

bool ReadWho(element who, Claim* claim) {
  std::string_view ranks;
  if (who["ranks"].get_string().get(ranks) == simdjson::SUCCESS && !ParseRankList(ranks, &claim->suspect_ranks)) {
    return false;
  }
  element hosts;
  if (who["hosts"].get(hosts) == simdjson::SUCCESS) StringArray(hosts, &claim->suspect_hosts);
  return true;
}

void ReadPrimary(element f, Claim* claim) {
  std::string_view s;
  if (f["rule"].get_string().get(s) == simdjson::SUCCESS) claim->rule = std::string(s);
  if (f["category"].get_string().get(s) == simdjson::SUCCESS) claim->category = std::string(s);
  if (f["severity"].get_string().get(s) == simdjson::SUCCESS) claim->severity = std::string(s);
  element suspects;
  // A finding without suspects (an older schema) names its ranks and hosts.
  ReadWho(f["suspects"].get(suspects) == simdjson::SUCCESS ? suspects : f, claim);
}

}  // namespace

bool ReadClaim(std::string_view diagnosis_json, Claim* claim, std::string* err) {
  *claim = Claim();
  simdjson::dom::parser parser;
  element root;
  if (parser.parse(simdjson::padded_string(diagnosis_json)).get(root) != simdjson::SUCCESS || !root.is_object()) {
    *err = "the diagnosis is not a JSON object";
    return false;
  }
  std::string_view s;
  if (root["verdict"]["status"].get_string().get(s) != simdjson::SUCCESS) {
    *err = "the diagnosis has no verdict.status";
    return false;
  }
  claim->status = std::string(s);
  std::string_view primary_rule;  // empty where verdict.primary is null or absent
  if (root["verdict"]["primary"].get_string().get(primary_rule) != simdjson::SUCCESS) primary_rule = {};
  element f;
  if (!FindPrimary(root, primary_rule, &f)) {
    if (primary_rule.empty()) return true;  // no primary finding
    *err = "verdict.primary names " + std::string(primary_rule) + " but no finding is the primary";
    return false;
  }
  claim->has_primary = true;
  ReadPrimary(f, claim);
  return true;
}

std::string NormaliseSource(std::string_view address) {
  std::string s(TrimSpace(address));
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (size_t hash = s.find('#'); hash != std::string::npos) s.erase(hash);
  // A scheme is letters, digits, + - . before "://" at the very start.
  if (size_t scheme = s.find("://");
      scheme != std::string::npos && std::all_of(s.begin(), s.begin() + scheme, [](unsigned char c) {
        return std::isalnum(c) || c == '+' || c == '-' || c == '.';
      })) {
    s.erase(0, scheme + 3);
  }
  if (StartsWith(s, "www.")) s.erase(0, 4);
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

int SplitBucket(std::string_view address) {
  const std::string head = Sha256Hex(NormaliseSource(address)).substr(0, 8);
  return static_cast<int>(std::strtoul(head.c_str(), nullptr, 16) % 100);
}

bool IsSetAside(std::string_view address) { return SplitBucket(address) < 30; }

bool ClaimsHealthy(std::string_view status) { return status == "ok" || status == "healthy"; }

// unknown, partial, incomplete claim neither (rules/vocabulary.h IsUndecided).
bool ClaimsFailure(std::string_view status) {
  Status s;
  return !ClaimsHealthy(status) && !(ParseStatus(status, &s) && IsUndecided(s));
}

namespace {

bool Contains(const std::vector<std::string>& v, std::string_view x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// A suspect host names a culprit host when the two are equal, when the
// suspect is the short name of a fully qualified culprit ("ip-10-0-0-2" and
// "ip-10-0-0-2.ec2.internal": the engine names hosts by their short name), or
// when the suspect is written "name[address]" (the engine's label for one of
// several machines that share a host name) and the culprit is that address.
bool SameHost(const std::string& suspect, const std::string& culprit) {
  if (suspect == culprit) return true;
  const bool address = suspect.find_first_not_of("0123456789.:") == std::string::npos;
  if (!address && culprit.size() > suspect.size() && culprit.compare(0, suspect.size(), suspect) == 0 &&
      culprit[suspect.size()] == '.') {
    return true;
  }
  size_t open = suspect.find('[');
  return open != std::string::npos && suspect.back() == ']' &&
         std::string_view(suspect).substr(open + 1, suspect.size() - open - 2) == culprit;
}

bool Same(int a, int b) { return a == b; }
bool Same(const std::string& suspect, const std::string& culprit) { return SameHost(suspect, culprit); }

// Every element of `part` is in `whole`, and there is at least one.
template <typename T>
bool NonEmptySubset(const std::vector<T>& part, const std::vector<T>& whole) {
  if (part.empty()) return false;
  for (const auto& x : part) {
    if (std::none_of(whole.begin(), whole.end(), [&](const T& w) { return Same(x, w); })) return false;
  }
  return true;
}

bool CauseAccepted(const Truth& t, const Claim& c) {
  return c.has_primary && (Contains(t.accept_rules, c.rule) || Contains(t.accept_categories, c.category));
}

// The suspects name the culprit and nobody else: every suspect rank is a
// culprit rank, or every suspect host a culprit host. Naming the culprit among
// innocent ranks is wrong (a superset blames the innocent too).
bool CulpritNamed(const Truth& t, const Claim& c) {
  return c.has_primary &&
         (NonEmptySubset(c.suspect_ranks, t.culprit_ranks) || NonEmptySubset(c.suspect_hosts, t.culprit_hosts));
}

bool AtLeastWarning(std::string_view severity) {
  return severity == "warning" || severity == "error" || severity == "critical";
}

std::string Joined(const std::vector<std::string>& v, const char* sep = ",") {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

std::string RanksText(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + (r < 0 ? std::string("...") : std::to_string(r));
  return out;
}

std::string WhoText(const std::vector<int>& ranks, const std::vector<std::string>& hosts) {
  std::string out;
  if (!ranks.empty()) out += "ranks " + RanksText(ranks);
  if (!hosts.empty()) out += std::string(out.empty() ? "" : " ") + "hosts " + Joined(hosts);
  return out.empty() ? "nobody" : out;
}

}  // namespace

Judgement Judge(std::string name, const Truth& truth, const Claim& claim) {
  Judgement j;
  j.name = std::move(name);
  j.truth = truth;
  j.claim = claim;
  j.set_aside = IsSetAside(truth.source);
  if (truth.Healthy()) {
    j.false_alarm = (claim.has_primary && AtLeastWarning(claim.severity)) || ClaimsFailure(claim.status);
    j.healthy_right = !j.false_alarm && ClaimsHealthy(claim.status);
    return j;
  }
  j.cause_right = CauseAccepted(truth, claim);
  j.false_healthy = ClaimsHealthy(claim.status);
  j.culprit_needed = truth.has_culprit && truth.choice_needed;
  j.culprit_right = j.culprit_needed && CulpritNamed(truth, claim);
  return j;
}

bool Judgement::Miss() const {
  if (truth.Healthy()) return !healthy_right;
  return !cause_right || (culprit_needed && !culprit_right);
}

std::string Judgement::Expected() const {
  if (truth.Healthy()) return "healthy (status ok, nothing at warning or above)";
  std::string out = truth.status + ": primary in";
  if (!truth.accept_categories.empty()) out += " categories " + Joined(truth.accept_categories);
  if (!truth.accept_rules.empty()) {
    out += std::string(truth.accept_categories.empty() ? "" : " or") + " rules " + Joined(truth.accept_rules);
  }
  if (culprit_needed) out += ", suspects within " + WhoText(truth.culprit_ranks, truth.culprit_hosts);
  return out;
}

std::string Judgement::Got() const {
  std::string out = "status " + claim.status + ", primary ";
  if (!claim.has_primary) return out + "none";
  return out + fmt::format("{} ({}, {}), suspects {}", claim.rule, claim.category, claim.severity,
                           WhoText(claim.suspect_ranks, claim.suspect_hosts));
}

void Tally::Add(const Judgement& j) {
  cases++;
  if (j.truth.Healthy()) {
    healthy++;
    false_alarms += j.false_alarm;
    return;
  }
  failing++;
  cause_right += j.cause_right;
  false_healthy += j.false_healthy;
  culprit_needed += j.culprit_needed;
  culprit_right += j.culprit_right;
}

SplitTally CountSplit(const std::vector<Judgement>& judgements, bool set_aside) {
  SplitTally t;
  for (const auto& j : judgements) {
    if (j.set_aside != set_aside) continue;
    t.total.Add(j);
    for (const auto& c : j.truth.categories) t.by_category[c].Add(j);
  }
  return t;
}

}  // namespace ncclscan
