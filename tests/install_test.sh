#!/usr/bin/env bash
# The installed tool: what `cmake --install` and `cpack -G DEB` produce from a build.
#
# usage: install_test.sh install BUILD_DIR   installs into a temporary prefix; the binary runs
#                                            from another directory, the man page exists and
#                                            names every command and every option of --help,
#                                            the bash completion loads and knows those options
#        install_test.sh deb BUILD_DIR       builds the .deb into a temporary directory; it holds
#                                            usr/bin/ncclscan and the man page, and Depends names
#                                            the libraries the binary links
# Prints "PASS x" / "FAIL x: why" per check and the closing line "N passed, N failed".
set -u
MODE=$1
B=$(readlink -f "$2")
W=$(mktemp -d /tmp/ncclscan_install.XXXXXX)
trap 'rm -rf "$W"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1: $2"; }

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

  MAN="$P/share/man/man1/ncclscan.1"
  if [ -s "$MAN" ]; then ok man_page_installed; else bad man_page_installed "no $MAN"; fi
  missing=""
  for cmd in scan rules explain test; do
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
  if command -v groff >/dev/null; then
    w=$(groff -man -ww -z "$MAN" 2>&1)
    if [ -z "$w" ]; then ok man_page_renders_cleanly; else bad man_page_renders_cleanly "$(head -c 200 <<<"$w")"; fi
  fi

  if python3 -c "import json,sys; sys.exit('findings' not in json.load(open(sys.argv[1]))['properties'])" "$P/share/ncclscan/diagnosis.schema.json" 2>/dev/null; then
    ok schema_installed
  else
    bad schema_installed "$P/share/ncclscan/diagnosis.schema.json"
  fi

  COMP="$P/share/bash-completion/completions/ncclscan"
  if bash -c "source '$COMP' && complete -p ncclscan" >/dev/null 2>&1; then ok completion_loads; else bad completion_loads "$COMP"; fi
  missing=""
  for o in $opts; do
    grep -qF -- "$o" "$COMP" 2>/dev/null || missing+=" $o"
  done
  if [ -z "$missing" ]; then ok completion_knows_every_help_option; else bad completion_knows_every_help_option "missing:$missing"; fi
  # Completing `ncclscan explain DIVERG` offers the rule id (from the installed binary).
  got=$(PATH="$P/bin:$PATH" bash -c "source '$COMP'; COMP_WORDS=(ncclscan explain DIVERG); COMP_CWORD=2; _ncclscan; echo \"\${COMPREPLY[*]}\"" 2>&1)
  if [[ " $got " == *" DIVERGENT-RANK "* ]]; then ok completion_offers_rule_ids; else bad completion_offers_rule_ids "'$got'"; fi
elif [ "$MODE" = deb ]; then
  if ! command -v cpack >/dev/null || ! command -v dpkg-deb >/dev/null; then
    echo "SKIP: cpack or dpkg-deb not installed"
    echo "0 passed, 0 failed"
    exit 0
  fi
  if cpack -G DEB --config "$B/CPackConfig.cmake" -B "$W/pkg" >"$W/log" 2>&1; then ok cpack_deb; else bad cpack_deb "$(tail -5 "$W/log")"; fi
  deb=$(ls "$W"/pkg/*.deb 2>/dev/null | head -1)
  contents=$(dpkg-deb -c "$deb" 2>&1)
  for f in ./usr/bin/ncclscan ./usr/share/man/man1/ncclscan.1 ./usr/share/bash-completion/completions/ncclscan ./usr/share/ncclscan/diagnosis.schema.json; do
    name=deb_holds${f//[.\/]/_}
    if grep -q " $f\$" <<<"$contents"; then ok "$name"; else bad "$name" "not in $(basename "$deb")"; fi
  done
  depends=$(dpkg-deb -f "$deb" Depends 2>&1)
  missing=""
  for lib in libre2 libyaml-cpp libtbb libfmt libboost-program-options libsimdjson libzstd libc6; do
    [[ $depends == *"$lib"* ]] || missing+=" $lib"
  done
  if [ -z "$missing" ]; then ok deb_depends_on_runtime_libraries; else bad deb_depends_on_runtime_libraries "missing:$missing in '$depends'"; fi
  maint=$(dpkg-deb -f "$deb" Maintainer 2>&1)
  if [ -n "$maint" ]; then ok deb_has_maintainer; else bad deb_has_maintainer "empty"; fi
else
  echo "usage: install_test.sh install|deb BUILD_DIR" >&2
  exit 2
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
