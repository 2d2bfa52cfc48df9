#!/bin/sh
# remove-local-config-resources: a KRM function (exec) that drops every item annotated
# config.kubernetes.io/local-config: "true" from the ResourceList kpt sends, like the kpt
# catalog's function of that name. kpt writes items in block style, each starting with `- ` at
# column 0 under `items:`; the annotation sits in the item's metadata.annotations.
exec awk '
function flush() {
  if (item != "" && !local_config) printf "%s", item
  item = ""; local_config = 0
}
BEGIN { section = "head" }
/^items:[ \t]*(\[\])?[ \t\r]*$/ { print "items:"; section = "items"; next }
/^[A-Za-z]/ && section == "items" { flush(); section = "tail" }
section == "items" {
  if ($0 ~ /^- /) flush()
  item = item $0 "\n"
  if ($0 ~ /^[ \t]+["\047]?config\.kubernetes\.io\/local-config["\047]?:[ \t]*["\047]?true["\047]?[ \t\r]*$/) local_config = 1
  next
}
{ print }
END { if (section == "items") flush() }
'
