#!/bin/bash
# Tool discovery script for the registry tests: prints declarations
# according to its first argument.
case "$1" in
case48)
	printf '%s' '[{"function_declarations":[{"name":"t1","description":"d","parametersJsonSchema":{"type":"object","properties":{"x":{"type":"string"}}}}]},{"name":"t2"}]'
	;;
mixed)
	cat <<'JSON'
[
  {"functionDeclarations": [
    {"name": "camel", "description": "from camelCase", "parameters": {"type": "OBJECT", "properties": {"n": {"type": "INTEGER"}, "l": {"type": "ARRAY", "items": {"type": "STRING"}}}}},
    {"description": "no name"}
  ]},
  {"name": "read_file", "description": "shadows a built-in"},
  {"name": "replace", "description": "shadows a built-in alias"},
  {"name": "bad name!", "description": "not a valid name"},
  {"name": "dup", "description": "first"},
  {"name": "dup", "description": "second"},
  {"name": "bare"},
  42,
  "text",
  {"other": true}
]
JSON
	;;
notarray)
	echo '{"name":"t1"}'
	;;
fail)
	echo 'discovery broke' >&2
	exit 4
	;;
big)
	head -c 11000000 /dev/zero
	;;
slow)
	echo $$ >discover.pid
	sleep 300 &
	echo $! >discover-child.pid
	wait
	;;
*)
	echo '[]'
	;;
esac
