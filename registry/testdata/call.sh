#!/bin/bash
# Tool call script for the registry tests: the tool name is $1, the
# arguments arrive as JSON on stdin. It runs in the primary root; a file
# named "sleep" there makes every tool sleep instead, in the background of
# the script, noting both pids.
args=$(cat)
if [ -e sleep ]; then
	echo $$ >call.pid
	sleep 300 &
	echo $! >call-child.pid
	wait
	exit 0
fi
case "$1" in
t1)
	printf 'called t1 with %s\n' "$args"
	;;
t2)
	echo 'partial output'
	echo 'something went wrong' >&2
	;;
*)
	echo "about to fail"
	exit 3
	;;
esac
