#!/usr/bin/env bash
# The installed tool: what `cmake --install` and `cpack -G DEB` produce from a build.
#
# usage: install_test.sh install BUILD_DIR   installs into a temporary prefix; the binary runs
#                                            from another directory and reads the site rules of
#                                            PREFIX/etc/ncclscan/rules.d; the man page (gzipped)
#                                            exists, names every command and every option of
#                                            --help and has the sections a site needs; the bash,
#                                            zsh and fish completions load where each shell looks
#                                            and complete every command and --help option
#        install_test.sh deb BUILD_DIR       builds the .deb into a temporary directory; it holds
#                                            the binary (stripped), man page, completions,
#                                            copyright and changelog; Depends names the libraries
#                                            the binary links; lintian (when installed) reports
#                                            no error and no warning
# Prints "PASS x" / "FAIL x: why" per check ("SKIP x: why" where a shell or lintian is not
# installed) and the closing line "N passed, N failed".
set -u
MODE=$1
B=$(readlink -f "$2")
W=$(mktemp -d /tmp/ncclscan_install.XXXXXX)
trap 'rm -rf "$W"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }
# The installed tool as a user without site rules or a config file runs it.
unset NCCLSCAN_RULES NCCLSCAN_SYSTEM_RULES
export NCCLSCAN_CONFIG_PATH=

if [ "$MODE" = install ]; then
  P="$W/prefix"
  if cmake --install "$B" --prefix "$P" >"$W/log" 2>&1; then ok cmake_install; else bad cmake_install "$(tail -3 "$W/log")"; fi
  NS="$P/bin/ncclscan"
  mkdir -p "$W/elsewhere"
  cd "$W/elsewhere" || exit 1
  v=$("$NS" --version 2>&1)
  if [[ $v =~ ^ncclscan\ [0-9]+\.[0-9]+ ]]; then ok version_from_another_directory; else bad version_from_another_directory "'$v'"; fi
  # The rules are compiled in: a scan works without the source tree.
  j=$(printf 'n1:1:1 [0] NCCL INFO Using network IB\n' | "$NS" --format json 2>&1)
  if [[ $j == *'"lines":1'* ]]; then ok scan_without_source_tree; else bad scan_without_source_tree "$(head -c 200 <<<"$j")"; fi

  # A site's rules: PREFIX/etc/ncclscan/rules.d for a binary installed under PREFIX.
  mkdir -p "$P/etc/ncclscan/rules.d"
  cat >"$P/etc/ncclscan/rules.d/site.yaml" <<'EOF'
rules:
  - id: SITE-INSTALLED-RULE
    title: A rule of the installed site
    category: ib
    family: nccl
    pattern: 'Using network IB'
    finding:
      severity: critical
      explanation: "a site rule"
    examples:
      match: ["n1:1:1 [0] NCCL INFO Using network IB"]
      no_match: ["n1:1:1 [0] NCCL INFO Using network Socket"]
EOF
  c=$("$NS" rules --check 2>&1)
  j=$(printf 'n1:1:1 [0] NCCL INFO Using network IB\n' | "$NS" --format json 2>&1)
  if [[ $c == *"site rules: $P/etc/ncclscan/rules.d (system)"* && $j == *'"rule":"SITE-INSTALLED-RULE"'* ]]; then
    ok installed_binary_reads_prefix_etc_rules
  else
    bad installed_binary_reads_prefix_etc_rules "$(head -c 300 <<<"$c $j")"
  fi

  MAN_GZ="$P/share/man/man1/ncclscan.1.gz"
  MAN="$W/ncclscan.1"
  if gzip -t "$MAN_GZ" 2>/dev/null && zcat "$MAN_GZ" >"$MAN" && [ -s "$MAN" ]; then
    ok man_page_installed_gzipped
  else
    bad man_page_installed_gzipped "no gzip file $MAN_GZ"
  fi
  # The commands, read from the usage block, so a new one cannot be left out of the checks.
  cmds=$("$NS" --help | sed -n 's/^ *ncclscan \([a-z][a-z]*\) .*/\1/p' | sort -u)
  missing=""
  for cmd in scan $cmds; do
    grep -q "^\\\\fB$cmd\\b\|^ncclscan $cmd\\b" "$MAN" 2>/dev/null || missing+=" $cmd"
  done
  if [ -z "$missing" ]; then ok man_page_names_every_command; else bad man_page_names_every_command "missing:$missing"; fi
  # --help and the man page are one text: every long option of one is in the other.
  opts=$("$NS" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
  missing=""
  for o in $opts; do
    grep -qF -- "${o//-/\\-}" "$MAN" 2>/dev/null || missing+=" $o"
  done
  if [ -n "$opts" ] && [ -z "$missing" ]; then ok man_page_has_every_help_option; else bad man_page_has_every_help_option "missing:$missing"; fi
  # What a site and a reader need beyond --help: the sections only the man page has.
  missing=""
  for sec in 'EXIT STATUS' ENVIRONMENT FILES 'READING THE REPORT' 'SEE ALSO'; do
    grep -qx "\.SH $sec" "$MAN" || missing+=" '$sec'"
  done
  for term in NCCLSCAN_RULES NCCLSCAN_CONFIG_PATH NCCLSCAN_SYSTEM_RULES /etc/ncclscan/rules.d \
    '~/.config/ncclscan/config' OK WARN FAIL CRASHED HUNG INCOMPLETE UNKNOWN PARTIAL root cascade context confidence; do
    grep -qxF "\\fB${term//-/\\-}\\fR" "$MAN" || missing+=" $term"
  done
  if [ -z "$missing" ]; then ok man_page_has_site_and_report_sections; else bad man_page_has_site_and_report_sections "missing:$missing"; fi
  if "$NS" --help | grep -q '^environment:\|^reading the report:'; then
    bad help_leaves_the_man_page_sections_out "--help prints a man-page-only section"
  else
    ok help_leaves_the_man_page_sections_out
  fi
  if command -v groff >/dev/null; then
    w=$(groff -man -ww -z "$MAN" 2>&1)
    if [ -z "$w" ]; then ok man_page_renders_cleanly; else bad man_page_renders_cleanly "$(head -c 200 <<<"$w")"; fi
  fi

  if python3 -c "import json,sys; sys.exit('findings' not in json.load(open(sys.argv[1]))['properties'])" "$P/share/ncclscan/diagnosis.schema.json" 2>/dev/null; then
    ok schema_installed
  else
    bad schema_installed "$P/share/ncclscan/diagnosis.schema.json"
  fi

  # Completions: where each shell's own packages put them, generated from cli/help.txt, so each
  # knows every command and every long option --help names.
  COMP="$P/share/bash-completion/completions/ncclscan"
  ZCOMP="$P/share/zsh/vendor-completions/_ncclscan"
  FCOMP="$P/share/fish/vendor_completions.d/ncclscan.fish"
  for f in "$COMP" "$ZCOMP" "$FCOMP"; do
    name=completion_installed_${f#"$P"/share/}
    name=${name//[\/.-]/_}
    missing=""
    for o in $opts scan rules explain test partial merge; do
      case $f in
        *.fish) grep -qE -- "-l ${o#--}( |\$)|-a $o " "$f" || missing+=" $o" ;;
        *) grep -qF -- "$o" "$f" || missing+=" $o" ;;
      esac
    done
    if [ ! -s "$f" ]; then bad "$name" "no $f"; elif [ -n "$missing" ]; then bad "$name" "missing:$missing"; else ok "$name"; fi
  done
  if bash -c "source '$COMP' && complete -p ncclscan" >/dev/null 2>&1; then ok completion_loads; else bad completion_loads "$COMP"; fi
  # bash_complete WORDS...: what completing the last word offers (the installed binary on PATH).
  bash_complete() {
    PATH="$P/bin:$PATH" bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _ncclscan; echo " ${COMPREPLY[*]} "' \
      _ "$COMP" "$@" 2>&1
  }
  got=$(bash_complete ncclscan explain DIVERG)
  if [[ $got == *" DIVERGENT-RANK "* ]]; then ok completion_offers_rule_ids; else bad completion_offers_rule_ids "'$got'"; fi
  p=$(bash_complete ncclscan partial -)
  m=$(bash_complete ncclscan merge -)
  r=$(bash_complete ncclscan rules -)
  c=$(bash_complete ncclscan pa)
  f=$(bash_complete ncclscan merge --format '')
  if [[ $p == *" -o "* && $m == *" -o "* && $r == *" --check "*" --no-config "* && $r != *" --hidden "* &&
    $c == " partial " && $f == " text json markdown trace " ]]; then
    ok bash_completes_each_command_s_own_flags
  else
    bad bash_completes_each_command_s_own_flags "partial:'$p' merge:'$m' rules:'$r' pa:'$c' --format:'$f'"
  fi
  if command -v zsh >/dev/null; then
    # zsh: the specs _ncclscan hands _arguments for `ncclscan merge -`, with the completion
    # system stubbed (what zsh makes of them is zsh's business).
    z=$(zsh -f -c '_arguments() { print -l -- "$@" }; _describe() { : }
      source "$1" >/dev/null; words=(ncclscan merge -); CURRENT=3; PREFIX=-; _ncclscan' _ "$ZCOMP" 2>&1)
    if zsh -n "$ZCOMP" && grep -qxF -- '-o+[combine partials into one]:file:_files' <<<"$z" &&
      grep -qxF -- '(-f --format)--format=[text | json | markdown | trace]:format:(text json markdown trace)' <<<"$z" &&
      grep -qxF -- '*:partial:_files' <<<"$z"; then
      ok zsh_completes_each_command_s_own_flags
    else
      bad zsh_completes_each_command_s_own_flags "$(head -c 300 <<<"$z" | tr '\n' '|')"
    fi
  else
    skip zsh_completes_each_command_s_own_flags "zsh is not installed"
  fi
  if command -v fish >/dev/null; then
    fc() { PATH="$P/bin:$PATH" fish --no-config -c "source '$FCOMP'; complete -C '$1'" 2>&1 | cut -f1 | tr '\n' ' '; }
    fm=$(fc 'ncclscan merge -')
    fe=$(fc 'ncclscan explain DIVERG')
    ff=$(fc 'ncclscan --format ')
    # Every --help option, offered by the command or commands that take it.
    fl=""
    for cmd in "" $cmds; do fl+=" $(fc "ncclscan ${cmd:+$cmd }--")"; done
    missing=""
    for o in $opts; do [[ " $fl " == *" $o "* ]] || missing+=" $o"; done
    if fish -n "$FCOMP" && [[ " $fm " == *" -o "* && " $fe " == *" DIVERGENT-RANK "* && $ff == "json markdown text trace " ]] &&
      [ -z "$missing" ]; then
      ok fish_completes_each_command_s_own_flags
    else
      bad fish_completes_each_command_s_own_flags "merge:'$fm' explain:'$fe' --format:'$ff' missing:$missing"
    fi
  else
    skip fish_completes_each_command_s_own_flags "fish is not installed"
  fi
elif [ "$MODE" = deb ]; then
  if ! command -v cpack >/dev/null || ! command -v dpkg-deb >/dev/null; then
    echo "SKIP: cpack or dpkg-deb not installed"
    echo "0 passed, 0 failed"
    exit 0
  fi
  if cpack -G DEB --config "$B/CPackConfig.cmake" -B "$W/pkg" >"$W/log" 2>&1; then ok cpack_deb; else bad cpack_deb "$(tail -5 "$W/log")"; fi
  deb=$(ls "$W"/pkg/*.deb 2>/dev/null | head -1)
  contents=$(dpkg-deb -c "$deb" 2>&1)
  for f in ./usr/bin/ncclscan ./usr/share/man/man1/ncclscan.1.gz ./usr/share/bash-completion/completions/ncclscan \
    ./usr/share/zsh/vendor-completions/_ncclscan ./usr/share/fish/vendor_completions.d/ncclscan.fish \
    ./usr/share/doc/ncclscan/copyright ./usr/share/doc/ncclscan/changelog.gz \
    ./usr/share/ncclscan/diagnosis.schema.json; do
    name=deb_holds${f//[.\/-]/_}
    if grep -q " $f\$" <<<"$contents"; then ok "$name"; else bad "$name" "not in $(basename "$deb")"; fi
  done
  depends=$(dpkg-deb -f "$deb" Depends 2>&1)
  missing=""
  for lib in libre2 libyaml-cpp libtbb libfmt libboost-program-options libsimdjson libzstd libc6; do
    [[ $depends == *"$lib"* ]] || missing+=" $lib"
  done
  if [ -z "$missing" ]; then ok deb_depends_on_runtime_libraries; else bad deb_depends_on_runtime_libraries "missing:$missing in '$depends'"; fi
  # A maintainer a bug report can reach: "Name <address>", not the placeholder of old.
  maint=$(dpkg-deb -f "$deb" Maintainer 2>&1)
  if [[ $maint =~ ^[A-Za-z][^\<]*\ \<[^@\ ]+@[^\>\ ]+\>$ && $maint != *noreply* ]]; then
    ok deb_has_maintainer
  else
    bad deb_has_maintainer "'$maint'"
  fi
  fields=$(dpkg-deb -f "$deb" Section Priority 2>&1 | tr '\n' ' ')
  version=$(dpkg-deb -f "$deb" Version 2>&1)
  if [ "$fields" = "Section: utils Priority: optional " ]; then ok deb_section_and_priority; else bad deb_section_and_priority "'$fields'"; fi
  dpkg-deb -x "$deb" "$W/root"
  if command -v readelf >/dev/null; then
    if ! readelf -S "$W/root/usr/bin/ncclscan" 2>&1 | grep -q '\.symtab\|\.debug_\|Error'; then
      ok deb_binary_is_stripped
    else
      bad deb_binary_is_stripped "it has .symtab or .debug_ sections"
    fi
  fi
  head=$(zcat "$W/root/usr/share/doc/ncclscan/changelog.gz" 2>&1 | head -1)
  if [[ $head == "ncclscan ($version) "* ]]; then ok deb_changelog_names_this_version; else bad deb_changelog_names_this_version "'$head', version $version"; fi
  if command -v lintian >/dev/null; then
    # As CI runs it (.ci/run), and a warning fails here too.
    l=$(lintian --fail-on error,warning "$deb" 2>&1)
    rc=$?
    if [ "$rc" = 0 ] && ! grep -q '^[EW]: ' <<<"$l"; then
      ok deb_is_lintian_clean
    else
      bad deb_is_lintian_clean "exit $rc: $(grep '^[EW]: ' <<<"$l" | head -5 | tr '\n' '|')"
    fi
  else
    skip deb_is_lintian_clean "lintian is not installed"
  fi
else
  echo "usage: install_test.sh install|deb BUILD_DIR" >&2
  exit 2
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
