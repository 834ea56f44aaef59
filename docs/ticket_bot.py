#!/usr/bin/env python3
"""A sample ticketing bot for ncclscan diagnoses (docs/ticket_bot.md).

Reads one or more `ncclscan --format json` documents and keeps a ticket store (a JSON file):
one ticket per problem, deduplicated across reruns, routed to the team that owns the fix.

    ncclscan --format json --job-id "$SLURM_JOB_ID" LOGS/ > diag.json
    python3 docs/ticket_bot.py --store tickets.json diag.json
    ncclscan --format json LOGS/ | python3 docs/ticket_bot.py --store tickets.json -

It prints one line per action (opened, updated, linked, merged) and exits 0; 2 on bad input
(a document that is not an ncclscan diagnosis of schema ncclscan.diagnosis/1, a store or teams
file it cannot read), before anything is written; 1 when the store cannot be written. Python 3 standard library only; no network:
a site replaces save_store() and Bot.say() with calls to its tracker.

How documents become tickets (the details are in docs/ticket_bot.md):
  * Only findings at warning or above with role root or cascade count (never info, never context).
  * Within one document, findings that belong to one failure form a group: a finding and those
    it explains (explained_by_findings / explains), plus, attached to the primary finding, the
    cascades whose cause was not found, the victims' reports (no suspects) and the findings that
    blame the same ranks as the primary. The group's head (the primary) is the ticket's root.
  * A group lands in the ticket keyed by its head's fingerprint; else in a ticket that was opened
    for a cascade alone (its root was not in those logs) and whose key this run explains: the
    root has been found, and becomes the ticket's key, title and owner (further such tickets are
    merged into it); else, for what the document headlines, in the ticket that lists it as a
    symptom (a rerun whose logs lack the root); else it opens a ticket for its head. The group's
    other fingerprints are listed on that ticket: as a "symptom", or as a "co-root" (another
    root, naming a culprit, of the same failure).
  * Fingerprints hold no hosts, ranks, paths, times or role: a rerun on renamed hosts, or with
    more or fewer logs, finds the same fingerprints and so the same tickets.
"""
import argparse
import datetime
import json
import os
import sys
import tempfile

SCHEMA = "ncclscan.diagnosis/1"
KNOWN_MINOR = 2            # this bot was written against schema_version 1.2
STORE_FORMAT = "ncclscan-ticket-bot/1"
TICKETABLE_SEVERITY = ("warning", "error", "critical")
SEVERITY_ORDER = {"info": 0, "warning": 1, "error": 2, "critical": 3}
EVIDENCE_KEPT = 3          # evidence lines kept on a ticket (from the latest run)
HISTORY_KEPT = 20          # runs remembered per ticket

# finding.owner -> team. A --teams JSON file overrides entries; its keys are owner classes or
# rule ids (a rule id wins over its owner class), e.g. {"fabric": "net-oncall", "XID-ERROR": "gpu-rma"}.
DEFAULT_TEAMS = {
    "fabric": "network-oncall",
    "gpu-hardware": "gpu-hardware",
    "node-config": "cluster-ops",
    "application": "training-team",
    "launcher": "scheduler-team",
    "library": "nccl-support",
}


class BadInput(Exception):
    """Input the bot refuses: exit 2."""


def warn(msg):
    print("ticket_bot: warning: " + msg, file=sys.stderr)


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------- input

def load_document(path):
    """One ncclscan diagnosis, checked enough to rely on what the bot reads."""
    name = "<stdin>" if path == "-" else path
    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
        doc = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise BadInput("%s: not a JSON document: %s" % (name, e))
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise BadInput("%s: schema is %r, this bot reads %s (ncclscan --format json)" % (name, got, SCHEMA))
    version = doc.get("schema_version", "1.0")   # 1.0 documents predate schema_version
    try:
        major, minor = (int(x) for x in str(version).split("."))
    except ValueError:
        raise BadInput("%s: schema_version %r is not major.minor" % (name, version))
    if major != 1:
        raise BadInput("%s: schema_version %s is not of %s" % (name, version, SCHEMA))
    if minor > KNOWN_MINOR:
        warn("%s: schema_version %s is newer than 1.%d: fields this bot does not know are ignored"
             % (name, version, KNOWN_MINOR))
    if minor < 2:
        warn("%s: schema_version %s: fingerprints before 1.2 include the role and will not match "
             "those of newer scans" % (name, version))
    findings = doc.get("findings")
    verdict = doc.get("verdict")
    if not isinstance(findings, list) or not isinstance(verdict, dict):
        raise BadInput("%s: no findings list or verdict object" % name)
    for i, f in enumerate(findings):
        if not isinstance(f, dict) or not all(k in f for k in ("rule", "severity", "role", "fingerprint")):
            raise BadInput("%s: findings[%d] lacks rule, severity, role or fingerprint" % (name, i))
    doc["_name"] = name
    return doc


def explainers(f, by_rule):
    """Fingerprints of the findings that explain f (1.2: explained_by_findings; before: by rule id)."""
    if "explained_by_findings" in f:
        return list(f["explained_by_findings"])
    return [fp for rule in f.get("explained_by", []) for fp in by_rule.get(rule, [])]


def rank_ids(ranges):
    """"0-2,5" -> [0, 1, 2, 5] (documents before 1.2 have only the range string)."""
    ids = []
    for part in filter(None, ranges.split(",")):
        lo, _, hi = part.partition("-")
        ids += range(int(lo), int(hi or lo) + 1)
    return ids


def rank_ranges(ids):
    """[0, 1, 2, 5] -> "0-2,5", as ncclscan writes them."""
    out, ids = [], sorted(set(ids))
    for i, r in enumerate(ids):
        if i and r == ids[i - 1] + 1:
            out[-1][1] = r
        else:
            out.append([r, r])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in out)


def suspects_of(f, field="suspects"):
    s = f.get(field) or {}
    ids = s["rank_ids"] if "rank_ids" in s else rank_ids(s.get("ranks", ""))
    return {"ranks": rank_ranges(ids), "rank_ids": sorted(ids), "hosts": sorted(s.get("hosts", []))}


def blames_same(a, b):
    """Do two findings of one run name the same culprit (a shared rank, else a shared host)?"""
    if a["rank_ids"] and b["rank_ids"]:
        return bool(set(a["rank_ids"]) & set(b["rank_ids"]))
    return bool(set(a["hosts"]) & set(b["hosts"]))


def groups_of(doc):
    """The document's ticketable findings, one per fingerprint, partitioned into failures.

    Returns (groups, primary): groups worst first, each a list of findings, its head first (the
    primary in its group); primary is the primary's fingerprint, None when it is not ticketable.
    Each finding is a copy with "_suspects" (merged over the findings of its fingerprint),
    "_explained" (a ticketable finding of the document explains it), "_top" (not explained, and
    not attached to the primary: the group's first top is its head) and "_as": how a
    ticket lists it when it is not the ticket's root: "co-root" for a root that names a culprit
    (another root of the same failure), "symptom" for the rest (explained by a finding of its
    group, a cascade, or a victim's report that names no suspect)."""
    by_fp = {}
    for f in doc["findings"]:                       # ranked worst first by ncclscan
        if f["severity"] not in TICKETABLE_SEVERITY or f["role"] == "context":
            continue
        if f["fingerprint"] in by_fp:               # same problem, another culprit: one ticket
            g = by_fp[f["fingerprint"]]
            s, t = g["_suspects"], suspects_of(f)
            s["rank_ids"] = sorted(set(s["rank_ids"]) | set(t["rank_ids"]))
            s["ranks"] = rank_ranges(s["rank_ids"])
            s["hosts"] = sorted(set(s["hosts"]) | set(t["hosts"]))
            continue
        g = dict(f)
        g["_suspects"] = suspects_of(f)
        by_fp[f["fingerprint"]] = g
    order = {fp: i for i, fp in enumerate(by_fp)}  # the document's rank order
    by_rule = {}
    for fp, f in by_fp.items():
        by_rule.setdefault(f["rule"], []).append(fp)

    parent = {fp: fp for fp in order}               # union-find over fingerprints

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb, key=order.get)] = min(ra, rb, key=order.get)

    primary = doc["verdict"].get("primary_fingerprint")
    if primary not in by_fp:
        primary = None
    for fp, f in by_fp.items():
        causes = [e for e in explainers(f, by_rule) if e in by_fp and e != fp]
        f["_top"] = not causes
        f["_explained"] = bool(causes)
        named = bool(f["_suspects"]["rank_ids"] or f["_suspects"]["hosts"])
        f["_as"] = "co-root" if f["role"] == "root" and named and not causes else "symptom"
        for e in causes:
            union(fp, e)
        for e in f.get("explains", []):
            if e in by_fp:
                union(fp, e)
        if primary is None or fp == primary or causes:
            continue
        # Attached to the primary: a cascade whose cause was not found, a victim's report (a
        # finding that names no suspect), a finding that blames the primary's culprit.
        if f["role"] == "cascade" or not named or blames_same(f["_suspects"], by_fp[primary]["_suspects"]):
            union(fp, primary)
            f["_top"] = False
    groups = {}
    for fp in order:
        groups.setdefault(find(fp), []).append(by_fp[fp])
    result = []
    for members in groups.values():
        if not any(m["_top"] for m in members):     # a cycle of explanations: its worst is the top
            members[0]["_top"] = True
        if primary is not None and any(m["fingerprint"] == primary for m in members):
            # the primary heads its group
            members.sort(key=lambda m: m["fingerprint"] != primary)
        result.append(members)
    return result, primary


# --------------------------------------------------------------------------- store

def load_store(path):
    if not os.path.exists(path):
        return {"format": STORE_FORMAT, "next": 1, "tickets": []}
    try:
        store = json.load(open(path, encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise BadInput("store %s: %s" % (path, e))
    if not isinstance(store, dict) or store.get("format") != STORE_FORMAT \
            or not isinstance(store.get("tickets"), list) or not isinstance(store.get("next"), int):
        raise BadInput("store %s: not a %s store" % (path, STORE_FORMAT))
    return store


def save_store(store, path):
    """Written to a temporary file and renamed: a crash never leaves half a store."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tickets.", dir=d)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(store, out, indent=1, sort_keys=True)
        out.write("\n")
    os.replace(tmp, path)


def load_teams(path):
    teams = dict(DEFAULT_TEAMS)
    if path:
        try:
            extra = json.load(open(path, encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise BadInput("teams %s: %s" % (path, e))
        if not isinstance(extra, dict) or not all(isinstance(v, str) for v in extra.values()):
            raise BadInput("teams %s: expected an object of owner (or rule id) -> team name" % path)
        teams.update(extra)
    return teams


def team_for(finding, teams):
    return teams.get(finding["rule"]) or teams.get(finding.get("owner", ""), "triage")


def who_text(c):
    who = ("rank%s %s" % ("s" if len(c["rank_ids"]) > 1 else "", c["ranks"])) if c["ranks"] else ""
    where = ",".join(c["hosts"])
    return who + (" on " if who and where else "") + where


def culprit_text(t):
    if t["culprit"]["rank_ids"] or t["culprit"]["hosts"]:
        return who_text(t["culprit"])
    return "none named" + (" (reported by %s)" % who_text(t["reported_by"]) if who_text(t["reported_by"]) else "")


# --------------------------------------------------------------------------- the bot

class Bot:
    def __init__(self, store, teams, job_id=None, labels=()):
        self.store, self.teams, self.job_id, self.labels = store, teams, job_id, list(labels)

    def open_tickets(self):
        return [t for t in self.store["tickets"] if t["status"] == "open"]

    def by_key(self, fp):
        return next((t for t in self.open_tickets() if t["fingerprint"] == fp), None)

    def by_symptom(self, fp):
        """Tickets listing fp as a symptom: a finding some run showed explained by (or attached
        to) the ticket's root. Not a co-root: another root beside it, that explained the same
        cascades in one run, is not taken for the same problem when a later run has it alone."""
        return [t for t in self.open_tickets() if t["symptoms"].get(fp, {}).get("as") == "symptom"]

    def say(self, line):
        """One action; a site posts it to its tracker here."""
        print(line)

    def process(self, doc):
        job = self.job_id or doc.get("job_id")
        groups, primary = groups_of(doc)
        if not groups:
            self.say("nothing to file for %s (verdict %s)" % (doc["_name"], doc["verdict"].get("status")))
        for members in groups:
            headline = primary is None or members[0]["fingerprint"] == primary
            self.file_group(doc, members, job, headline)

    def file_group(self, doc, members, job, headline):
        head = next(m for m in members if m["_top"])
        # 1. The head's problem has a ticket.
        ticket = self.by_key(head["fingerprint"])
        # 2. Tickets opened for a cascade alone (their root was not in those logs) whose key this
        #    run explains (ncclscan's explained_by_findings, within this group): the root has been
        #    found, they are the head's problem. Only those: a ticket whose key is a root stays.
        adopted = [t for m in members if m["_explained"]
                   for t in [self.by_key(m["fingerprint"])] if t is not None and t.get("provisional")]
        if ticket is None and adopted:
            ticket = min(adopted, key=lambda t: t["number"])
        # 3. A rerun whose logs lack the root: what it headlines is listed as a symptom. (Not for
        #    the document's other groups: a report the engine could not link to this run's primary
        #    is not taken for an older incident.)
        if ticket is None and headline:
            listed = self.by_symptom(head["fingerprint"])
            if listed:
                ticket = max(listed, key=lambda t: (t["occurrences"], -t["number"]))
        new = ticket is None
        if new:
            ticket = self.new_ticket(head)
        for other in adopted:
            if other is not ticket:
                self.merge(other, ticket)
        self.update(ticket, doc, members, head, job, new)

    def new_ticket(self, head):
        n = self.store["next"]
        self.store["next"] = n + 1
        t = {"id": "T-%04d" % n, "number": n, "status": "open", "fingerprint": head["fingerprint"],
             "symptoms": {}, "occurrences": 0, "job_ids": [], "labels": [], "opened_at": now_iso(), "history": []}
        self.store["tickets"].append(t)
        return t

    def merge(self, other, into):
        """A ticket opened for a cascade alone, whose root has a ticket: close it as a duplicate."""
        self.link(into, other["fingerprint"], other["rule"], other["title"], "symptom", quiet=True)
        for fp, s in other["symptoms"].items():
            if fp != into["fingerprint"]:
                self.link(into, fp, s["rule"], s.get("title"), s["as"], quiet=True)
        into["occurrences"] += other["occurrences"]
        into["job_ids"] += [j for j in other["job_ids"] if j not in into["job_ids"]]
        other["status"] = "duplicate"
        other["duplicate_of"] = into["id"]
        self.say("merged %s into %s" % (other["id"], into["id"]))

    def update(self, t, doc, members, head, job, new):
        fps = {m["fingerprint"]: m for m in members}
        rooted_from = None
        if t["fingerprint"] != head["fingerprint"] and fps.get(t["fingerprint"], {}).get("_explained"):
            # adopted (step 2): the head that explains the key becomes the key, the key a symptom
            rooted_from = "%s %s" % (t["fingerprint"], t["rule"])
            self.link(t, t["fingerprint"], t["rule"], t["title"], "symptom", quiet=True)
            t["fingerprint"] = head["fingerprint"]
        if t["fingerprint"] == head["fingerprint"]:
            t["symptoms"].pop(head["fingerprint"], None)
            t.update(rule=head["rule"], category=head.get("category"), title=head.get("title"),
                     owner=head.get("owner"), team=team_for(head, self.teams),
                     provisional=head["role"] == "cascade")
            primary_here = doc["verdict"].get("primary_fingerprint") == head["fingerprint"]
            t["headline"] = doc["verdict"].get("headline") if primary_here else head.get("title")
        # else: a rerun that holds only the ticket's symptoms (step 3): its key and owner stay
        # The latest culprit: the head's suspects. A run whose head names none (a victim's or
        # launcher's report, an error both ends of a link see) leaves the last one known, and
        # says who reported it.
        if head["_suspects"]["rank_ids"] or head["_suspects"]["hosts"] or "culprit" not in t:
            t["culprit"] = head["_suspects"]
        t["reported_by"] = suspects_of(head, "reporters")
        sev = max((m["severity"] for m in members), key=SEVERITY_ORDER.get)
        if SEVERITY_ORDER[sev] > SEVERITY_ORDER.get(t.get("severity"), -1):
            t["severity"] = sev
        t["occurrences"] += 1
        t["updated_at"] = now_iso()
        t["last_log_time"] = head.get("last_seen") or head.get("first_seen")
        t["evidence"] = [{k: e.get(k) for k in ("file", "line", "text", "rank", "host", "time")}
                         for e in head.get("evidence", [])[:EVIDENCE_KEPT]]
        if job and job not in t["job_ids"]:
            t["job_ids"].append(job)
        t["labels"] += [lab for lab in self.labels if lab not in t["labels"]]
        t["history"] = (t["history"] + [{"at": t["updated_at"], "job_id": job, "document": doc["_name"],
                                         "reported_as": head["rule"], "culprit": culprit_text(t)}])[-HISTORY_KEPT:]
        if new:
            self.say("opened %s %s %s owner=%s culprit=%s" % (t["id"], t["fingerprint"], t["rule"], t["team"],
                                                               culprit_text(t)))
        elif rooted_from:
            self.say("updated %s %s %s owner=%s root found (was %s) occurrences=%d"
                     % (t["id"], t["fingerprint"], t["rule"], t["team"], rooted_from, t["occurrences"]))
        else:
            self.say("updated %s %s %s owner=%s occurrences=%d (seen as %s)"
                     % (t["id"], t["fingerprint"], t["rule"], t["team"], t["occurrences"], head["rule"]))
        for m in members:
            if m["fingerprint"] != t["fingerprint"]:
                self.link(t, m["fingerprint"], m["rule"], m.get("title"), m["_as"])

    def link(self, t, fp, rule, title, as_, quiet=False):
        """List fp on ticket t: as "symptom" (explained by, or attached to, the root in some run)
        or "co-root" (another root of the same failure in some run); symptom wins."""
        s = t["symptoms"].get(fp)
        if s is None:
            t["symptoms"][fp] = {"rule": rule, "title": title, "as": as_}
            if not quiet:
                self.say("linked %s %s to %s" % (fp, rule, t["id"]))
        elif as_ == "symptom":
            s["as"] = "symptom"


def main(argv=None):
    ap = argparse.ArgumentParser(description="Sample ticketing bot for ncclscan JSON diagnoses "
                                             "(docs/ticket_bot.md).")
    ap.add_argument("documents", nargs="*", default=["-"],
                    help="ncclscan --format json output files; - (the default) reads stdin")
    ap.add_argument("--store", required=True, help="the ticket store, a JSON file (created if missing)")
    ap.add_argument("--teams", help="JSON object mapping owner classes or rule ids to team names")
    ap.add_argument("--job-id", help="job id recorded on the tickets (default: the document's job_id)")
    ap.add_argument("--label", action="append", default=[], help="label added to every ticket touched (repeatable)")
    ap.add_argument("--dry-run", action="store_true", help="print the actions, do not write the store")
    args = ap.parse_args(argv)
    try:
        teams = load_teams(args.teams)
        store = load_store(args.store)
        docs = [load_document(p) for p in args.documents]   # all checked before anything changes
    except BadInput as e:
        print("ticket_bot: " + str(e), file=sys.stderr)
        return 2
    bot = Bot(store, teams, args.job_id, args.label)
    for doc in docs:
        bot.process(doc)
    if args.dry_run:
        print("dry run: %s not written" % args.store)
        return 0
    try:
        save_store(store, args.store)
    except OSError as e:
        print("ticket_bot: cannot write the store %s: %s" % (args.store, e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
