# Sourced by the check scripts (passes_check.sh, rtc_check.sh, streaming_check.sh): adds a run's
# section at the top of a report under reports/, newest first.
# prepend_section REPORT TITLE HOST_FILE LOAD_START BODY_FILE: the report keeps its first line
# (TITLE when it is new), then "## <date>: <cpu>", the host description, the load averages
# and the body, then the sections already there.
prepend_section() {
  local report=$1 title=$2 host=$3 load_start=$4 body=$5
  local tmp
  tmp=$(mktemp)
  {
    head -1 "$report" 2>/dev/null || echo "$title"
    echo
    echo "## $(date -u +%Y-%m-%dT%H:%MZ): $(sed -n 's/^  cpu: //p' "$host")"
    echo
    echo '```'
    cat "$host"
    echo '```'
    echo
    echo "Load average at start $load_start, at end $(cut -d' ' -f1-3 /proc/loadavg)."
    cat "$body"
    echo
    tail -n +2 "$report" 2>/dev/null | sed '1{/^$/d}' || true
  } > "$tmp"
  mv "$tmp" "$report"
  echo "wrote $report"
}
