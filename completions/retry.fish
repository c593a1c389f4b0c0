complete -c retry -n 'not __fish_retry_command >/dev/null' -s r -l retries -d 'Retries after the first attempt; 0 runs the command once [default: 5]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -s a -l attempts -d 'Total attempts, at least 1 (another spelling of --retries)' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l max-time -d 'Deadline for the whole run, measured from start; 0 disables it [default: none]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l timeout -d 'Time limit for one attempt; 0 disables it [default: none]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l timeouts -d 'Time limits per attempt as a list: attempt n gets entry n' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l reset-after -d 'An attempt that ran at least this long starts the schedule and the attempt limit afresh' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l kill-after -d 'Grace between the terminating signal and SIGKILL [default: 2s]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l kill-signal -d 'Signal that terminates an attempt: a name (TERM, SIGINT, RTMIN+1) or a number [default: TERM]' -r -f -a "TERM\t'terminate (the default)'
INT\t'interrupt, as Ctrl-C'
HUP\t'hang up'
QUIT\t'quit, and dump core by default'
KILL\t'kill, with no chance to clean up'
USR1\t'user-defined signal 1'
USR2\t'user-defined signal 2'"
complete -c retry -n 'not __fish_retry_command >/dev/null' -s b -l base -d 'First nominal delay (for ethernet: the slot time) [default: 1s]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l max -d 'Cap on any single delay, after jitter too [default: 30s, or --base when larger]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l multiplier -d 'Growth factor of exponential backoff, at least 1 [default: 2]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l backoff -d 'How the nominal delay grows [default: exponential]' -r -f -a "exponential\t'base * multiplier^(n-1)'
constant\t'base, every time'
linear\t'base * n'
fibonacci\t'base * fib(n): 1, 1, 2, 3, 5, ...'
ethernet\t'IEEE 802.3 truncated binary exponential backoff: r * base, r in [0, 2^min(n,10) - 1]'"
complete -c retry -n 'not __fish_retry_command >/dev/null' -l delays -d 'The delays as a list, instead of a backoff curve: retry n waits entry n' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l jitter -d 'How delays are randomised [default: equal]' -r -f -a "none\t'the nominal delay'
full\t'uniform in [0, d]'
equal\t'd/2 + uniform in [0, d/2] (the default)'
decorrelated\t'min(max, uniform in [base, 3 * previous])'"
complete -c retry -n 'not __fish_retry_command >/dev/null' -l seed -d 'Seed for the jitter, so the same flags give the same delays [default: from OS entropy]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l splay -d 'Wait a random time in [0, DUR] before the first attempt [default: none]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l retry-on-exit -d 'Retry only these exit codes; any other failure ends the run (e.g. 1,75-78)' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l stop-on-exit -d 'These exit codes end the run at once, as a permanent failure (e.g. 2,126-127)' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l until-stdout -d 'The attempt succeeds exactly when a line of its stdout matches REGEX' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l until-stderr -d 'The attempt succeeds exactly when a line of its stderr matches REGEX' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l retry-if-stdout -d 'An attempt whose stdout has a line matching REGEX fails (retryably), even if it exited 0' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l retry-if-stderr -d 'An attempt whose stderr has a line matching REGEX fails (retryably), even if it exited 0' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l stop-if-stdout -d 'An attempt whose stdout has a line matching REGEX fails for good: the run ends at once' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l stop-if-stderr -d 'An attempt whose stderr has a line matching REGEX fails for good: the run ends at once' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l retry-after-stdout -d 'A hint in the command\'s own format on stdout: the first group of REGEX (else the match)' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l retry-after-stderr -d 'A hint in the command\'s own format on stderr: the first group of REGEX (else the match)' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l retry-after-max -d 'The longest wait a hint may ask for; a longer hint is cut to it [default: 5m]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l consecutive -d 'Succeed only after N successful attempts in a row [default: 1]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l fail-exit -d 'Exit with N instead of the failed run\'s status (e.g. 1 for Docker\'s HEALTHCHECK)' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l on-retry -d 'Run CMD through `sh -c` before each retry\'s wait' -r -f -a "(__fish_complete_command)"
complete -c retry -n 'not __fish_retry_command >/dev/null' -l on-failure -d 'Run CMD through `sh -c` once when retry gives up' -r -f -a "(__fish_complete_command)"
complete -c retry -n 'not __fish_retry_command >/dev/null' -l on-success -d 'Run CMD through `sh -c` once when the run succeeds' -r -f -a "(__fish_complete_command)"
complete -c retry -n 'not __fish_retry_command >/dev/null' -l config -d 'Read settings from FILE instead of $RETRY_CONFIG or $XDG_CONFIG_HOME/retry/config.toml' -r -F
complete -c retry -n 'not __fish_retry_command >/dev/null' -l profile -d 'Apply [profile.NAME] of the config file over its [defaults] [env: RETRY_PROFILE]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l stdin -d 'What each attempt reads on stdin [default: auto]' -r -f -a "auto\t'Rewind a regular file before each attempt; pass anything else through untouched'
replay\t'Capture stdin and give every attempt the same bytes from the start'
inherit\t'Pass stdin through untouched, never rewinding'
null\t'Every attempt reads /dev/null'"
complete -c retry -n 'not __fish_retry_command >/dev/null' -l failed-output -d 'What becomes of the output of failed attempts that another follows [default: pass]' -r -f -a "pass\t'Let it through as it comes'
drop\t'Hold each attempt\'s output; keep only the final attempt\'s'
on-give-up\t'Hold it; write it to stderr before the final attempt\'s if the run gives up, drop it if the run succeeds'"
complete -c retry -n 'not __fish_retry_command >/dev/null' -l keep-max -d 'Under --failed-output on-give-up, the most kept of each earlier attempt\'s output [default: 1M]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l metrics-file -d 'When the run ends, write its figures to PATH in the Prometheus text format' -r -F
complete -c retry -n 'not __fish_retry_command >/dev/null' -l report -d 'When the run ends, write a summary of it to FILE' -r -F
complete -c retry -n 'not __fish_retry_command >/dev/null' -l report-format -d 'The --report\'s format [default: json]' -r -f -a "json\t'One JSON object, with each attempt\'s detail; the file is replaced'
github\t'name=value lines appended to the file, as $GITHUB_OUTPUT takes them'"
complete -c retry -n 'not __fish_retry_command >/dev/null' -l metrics-job -d 'The job label of the metrics [default: the command\'s file name]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l label -d 'Name the command by TEXT in every line retry writes about the run' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l log-format -d 'Format of retry\'s own messages: text, or json (one object per line per event) [default: text]' -r -f -a "text\t'Lines for people, prefixed `retry:`'
json\t'One JSON object per line per event, for log pipelines'"
complete -c retry -n 'not __fish_retry_command >/dev/null' -l budget -d 'Take retries from the retry budget NAME, shared by every run that names it' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l budget-ratio -d 'Retries each first attempt earns, from 0 to 1 [default: 0.1]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l budget-floor -d 'Retries allowed per DUR whatever the traffic; DUR is also the budget\'s window [default: 10/1m]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l breaker -d 'Stop running the command while the circuit breaker NAME is open' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l breaker-threshold -d 'Failed attempts in a row, across every run, that open the breaker [default: 5]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l breaker-cooldown -d 'How long the breaker stays open before a probe may go [default: 1m]' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l state -d 'Where budgets and breakers live: a directory, or a Redis server [default: $XDG_STATE_HOME/retry]' -r -f -a "(__fish_complete_directories)"
complete -c retry -n 'not __fish_retry_command >/dev/null' -s t -l times -d 'N attempts in all (--attempts N); -1 is no limit' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -s d -l delay -d 'The delays in seconds, the last repeated (--delays LIST)' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -s u -l until -d 'Repeat until one of the comma-separated criteria holds' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -s w -l while -d 'Repeat while one of the comma-separated criteria holds' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -s m -l message -d 'Name the command by TEXT in retry\'s lines (--label TEXT)' -r -f
complete -c retry -n 'not __fish_retry_command >/dev/null' -l forever -d 'Retry without an attempt limit (usually with --max-time)'
complete -c retry -n 'not __fish_retry_command >/dev/null' -l restart -d 'Start the command again after a success, after the first delay'
complete -c retry -n 'not __fish_retry_command >/dev/null' -l http -d 'Judge each attempt by the last HTTP status line it printed, and honour Retry-After'
complete -c retry -n 'not __fish_retry_command >/dev/null' -l honor-retry-after -d 'A Retry-After header printed by a failed attempt sets the least wait before the next'
complete -c retry -n 'not __fish_retry_command >/dev/null' -l invert -d 'Swap success and failure: retry until COMMAND fails'
complete -c retry -n 'not __fish_retry_command >/dev/null' -l hold-stdout -d 'Hold each attempt\'s stdout until it ends: only the final attempt\'s goes to stdout, the others\' to stderr'
complete -c retry -n 'not __fish_retry_command >/dev/null' -l foreground -d 'Keep the attempt in retry\'s own process group, for commands that read the terminal'
complete -c retry -n 'not __fish_retry_command >/dev/null' -s q -l quiet -d 'Print only retry\'s own errors'
complete -c retry -n 'not __fish_retry_command >/dev/null' -s v -l verbose -d 'Say more: each attempt\'s start, the seed, the success'
complete -c retry -n 'not __fish_retry_command >/dev/null' -l show-state -d 'Print the state of the budget and breaker named, and exit (COMMAND optional)'
complete -c retry -n 'not __fish_retry_command >/dev/null' -l reset-state -d 'Reset the budget and breaker named (a full budget, a closed breaker), and exit'
complete -c retry -n 'not __fish_retry_command >/dev/null' -l dry-run -d 'Print the planned schedule and exit without running anything'
complete -c retry -n 'not __fish_retry_command >/dev/null' -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retry -n 'not __fish_retry_command >/dev/null' -s V -l version -d 'Print version'

# COMMAND and its arguments complete as that command would: __fish_retry_command prints the
# words from COMMAND on (the one under the cursor last), or fails before COMMAND.
function __fish_retry_command
    set -l words (commandline -opc)
    set -e words[1]
    while set -q words[1]
        if string match -qr -- '^-[qvhV]*[rabtduwm]$' $words[1]
            set -e words[1..2]
            continue
        end
        switch $words[1]
            case --
                set -e words[1]
                break
            case -r --retries -a --attempts --max-time --timeout --timeouts --reset-after --kill-after --kill-signal -b --base --max --multiplier --backoff --delays --jitter --seed --splay --retry-on-exit --stop-on-exit --until-stdout --until-stderr --retry-if-stdout --retry-if-stderr --stop-if-stdout --stop-if-stderr --retry-after-stdout --retry-after-stderr --retry-after-max --consecutive --fail-exit --on-retry --on-failure --on-success --config --profile --stdin --failed-output --keep-max --metrics-file --report --report-format --metrics-job --label --log-format --budget --budget-ratio --budget-floor --breaker --breaker-threshold --breaker-cooldown --state -t --times -d --delay -u --until -w --while -m --message
                set -e words[1..2]
                continue
            case '-*'
                set -e words[1]
                continue
        end
        break
    end
    set -l current (commandline -ct)
    if not set -q words[1]
        # The word under the cursor: an option, an option's value, or COMMAND itself.
        set -l before (commandline -opc)[-1]
        if string match -q -- '-*' $current; and test "$before" != --
            return 1
        end
        if contains -- $before -r --retries -a --attempts --max-time --timeout --timeouts --reset-after --kill-after --kill-signal -b --base --max --multiplier --backoff --delays --jitter --seed --splay --retry-on-exit --stop-on-exit --until-stdout --until-stderr --retry-if-stdout --retry-if-stderr --stop-if-stdout --stop-if-stderr --retry-after-stdout --retry-after-stderr --retry-after-max --consecutive --fail-exit --on-retry --on-failure --on-success --config --profile --stdin --failed-output --keep-max --metrics-file --report --report-format --metrics-job --label --log-format --budget --budget-ratio --budget-floor --breaker --breaker-threshold --breaker-cooldown --state -t --times -d --delay -u --until -w --while -m --message; or string match -qr -- '^-[qvhV]*[rabtduwm]$' $before
            return 1
        end
    end
    printf '%s
' $words $current
end
complete -c retry -n '__fish_retry_command >/dev/null' -f -a '(__fish_complete_subcommand --commandline (__fish_retry_command))'
