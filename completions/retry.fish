complete -c retry -s r -l retries -d 'Retries after the first attempt; 0 runs the command once [default: 5]' -r -f
complete -c retry -s a -l attempts -d 'Total attempts, at least 1 (another spelling of --retries)' -r -f
complete -c retry -s m -l max-time -d 'Deadline for the whole run, measured from start; 0 disables it [default: none]' -r -f
complete -c retry -s t -l timeout -d 'Time limit for one attempt; 0 disables it [default: none]' -r -f
complete -c retry -l kill-after -d 'Grace between the terminating signal and SIGKILL [default: 2s]' -r -f
complete -c retry -l kill-signal -d 'Signal that terminates an attempt: a name (TERM, SIGINT, RTMIN+1) or a number [default: TERM]' -r -f
complete -c retry -s b -l base -d 'First nominal delay (for ethernet: the slot time) [default: 1s]' -r -f
complete -c retry -l max -d 'Cap on any single delay, after jitter too [default: 30s]' -r -f
complete -c retry -l multiplier -d 'Growth factor of exponential backoff, at least 1 [default: 2]' -r -f
complete -c retry -l backoff -d 'How the nominal delay grows [default: exponential]' -r -f -a "exponential\t'base * multiplier^(n-1)'
constant\t'base, every time'
linear\t'base * n'
fibonacci\t'base * fib(n): 1, 1, 2, 3, 5, ...'
ethernet\t'IEEE 802.3 truncated binary exponential backoff: r * base, r in [0, 2^min(n,10) - 1]'"
complete -c retry -l jitter -d 'How delays are randomised [default: equal]' -r -f
complete -c retry -l seed -d 'Seed for the jitter, so the same flags give the same delays [default: from OS entropy]' -r -f
complete -c retry -l splay -d 'Wait a random time in [0, DUR] before the first attempt [default: none]' -r -f
complete -c retry -l retry-on-exit -d 'Retry only these exit codes; any other failure ends the run (e.g. 1,75-78)' -r -f
complete -c retry -l stop-on-exit -d 'These exit codes end the run at once, as a permanent failure (e.g. 2,126-127)' -r -f
complete -c retry -l until-stdout -d 'The attempt succeeds exactly when a line of its stdout matches REGEX' -r -f
complete -c retry -l until-stderr -d 'The attempt succeeds exactly when a line of its stderr matches REGEX' -r -f
complete -c retry -l retry-if-stdout -d 'An attempt whose stdout has a line matching REGEX fails (retryably), even if it exited 0' -r -f
complete -c retry -l retry-if-stderr -d 'An attempt whose stderr has a line matching REGEX fails (retryably), even if it exited 0' -r -f
complete -c retry -l consecutive -d 'Succeed only after N successful attempts in a row [default: 1]' -r -f
complete -c retry -l fail-exit -d 'Exit with N instead of the failed run\'s status (e.g. 1 for Docker\'s HEALTHCHECK)' -r -f
complete -c retry -l on-retry -d 'Run CMD through `sh -c` before each retry\'s wait' -r -f -a "(__fish_complete_command)"
complete -c retry -l on-failure -d 'Run CMD through `sh -c` once when retry gives up' -r -f -a "(__fish_complete_command)"
complete -c retry -l on-success -d 'Run CMD through `sh -c` once when the run succeeds' -r -f -a "(__fish_complete_command)"
complete -c retry -l config -d 'Read settings from FILE instead of $RETRY_CONFIG or $XDG_CONFIG_HOME/retry/config.toml' -r -F
complete -c retry -l profile -d 'Apply [profile.NAME] of the config file over its [defaults] [env: RETRY_PROFILE]' -r -f
complete -c retry -l stdin -d 'What each attempt reads on stdin [default: auto]' -r -f -a "auto\t'Rewind a regular file before each attempt; pass anything else through untouched'
replay\t'Capture stdin and give every attempt the same bytes from the start'
inherit\t'Pass stdin through untouched, never rewinding'
null\t'Every attempt reads /dev/null'"
complete -c retry -l log-format -d 'Format of retry\'s own messages: text, or json (one object per line per event) [default: text]' -r -f -a "text\t'Lines for people, prefixed `retry:`'
json\t'One JSON object per line per event, for log pipelines'"
complete -c retry -l forever -d 'Retry without an attempt limit (usually with --max-time)'
complete -c retry -l invert -d 'Swap success and failure: retry until COMMAND fails'
complete -c retry -l hold-stdout -d 'Hold each attempt\'s stdout until it ends: only the final attempt\'s goes to stdout, the others\' to stderr'
complete -c retry -l foreground -d 'Keep the attempt in retry\'s own process group, for commands that read the terminal'
complete -c retry -s q -l quiet -d 'Print only retry\'s own errors'
complete -c retry -s v -l verbose -d 'Say more: each attempt\'s start, the seed, the success'
complete -c retry -l dry-run -d 'Print the planned schedule and exit without running anything'
complete -c retry -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retry -s V -l version -d 'Print version'
