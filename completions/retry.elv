
use builtin;
use str;

var retry-options~ = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'retry'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'retry'= {
            cand -r 'Retries after the first attempt; 0 runs the command once [default: 5]'
            cand --retries 'Retries after the first attempt; 0 runs the command once [default: 5]'
            cand -a 'Total attempts, at least 1 (another spelling of --retries)'
            cand --attempts 'Total attempts, at least 1 (another spelling of --retries)'
            cand --max-time 'Deadline for the whole run, measured from start; 0 disables it [default: none]'
            cand --timeout 'Time limit for one attempt; 0 disables it [default: none]'
            cand --timeouts 'Time limits per attempt as a list: attempt n gets entry n'
            cand --reset-after 'An attempt that ran at least this long starts the schedule and the attempt limit afresh'
            cand --kill-after 'Grace between the terminating signal and SIGKILL [default: 2s]'
            cand --kill-signal 'Signal that terminates an attempt: a name (TERM, SIGINT, RTMIN+1) or a number [default: TERM]'
            cand -b 'First nominal delay (for ethernet: the slot time) [default: 1s]'
            cand --base 'First nominal delay (for ethernet: the slot time) [default: 1s]'
            cand --max 'Cap on any single delay, after jitter too [default: 30s, or --base when larger]'
            cand --multiplier 'Growth factor of exponential backoff, at least 1 [default: 2]'
            cand --backoff 'How the nominal delay grows [default: exponential]'
            cand --delays 'The delays as a list, instead of a backoff curve: retry n waits entry n'
            cand --jitter 'How delays are randomised [default: equal]'
            cand --seed 'Seed for the jitter, so the same flags give the same delays [default: from OS entropy]'
            cand --splay 'Wait a random time in [0, DUR] before the first attempt [default: none]'
            cand --retry-on-exit 'Retry only these exit codes; any other failure ends the run (e.g. 1,75-78)'
            cand --stop-on-exit 'These exit codes end the run at once, as a permanent failure (e.g. 2,126-127)'
            cand --until-stdout 'The attempt succeeds exactly when a line of its stdout matches REGEX'
            cand --until-stderr 'The attempt succeeds exactly when a line of its stderr matches REGEX'
            cand --retry-if-stdout 'An attempt whose stdout has a line matching REGEX fails (retryably), even if it exited 0'
            cand --retry-if-stderr 'An attempt whose stderr has a line matching REGEX fails (retryably), even if it exited 0'
            cand --stop-if-stdout 'An attempt whose stdout has a line matching REGEX fails for good: the run ends at once'
            cand --stop-if-stderr 'An attempt whose stderr has a line matching REGEX fails for good: the run ends at once'
            cand --retry-after-stdout 'A hint in the command''s own format on stdout: the first group of REGEX (else the match)'
            cand --retry-after-stderr 'A hint in the command''s own format on stderr: the first group of REGEX (else the match)'
            cand --retry-after-max 'The longest wait a hint may ask for; a longer hint is cut to it [default: 5m]'
            cand --consecutive 'Succeed only after N successful attempts in a row [default: 1]'
            cand --fail-exit 'Exit with N instead of the failed run''s status (e.g. 1 for Docker''s HEALTHCHECK)'
            cand --on-retry 'Run CMD through `sh -c` before each retry''s wait'
            cand --on-failure 'Run CMD through `sh -c` once when retry gives up'
            cand --on-success 'Run CMD through `sh -c` once when the run succeeds'
            cand --config 'Read settings from FILE instead of $RETRY_CONFIG or $XDG_CONFIG_HOME/retry/config.toml'
            cand --profile 'Apply [profile.NAME] of the config file over its [defaults] [env: RETRY_PROFILE]'
            cand --stdin 'What each attempt reads on stdin [default: auto]'
            cand --failed-output 'What becomes of the output of failed attempts that another follows [default: pass]'
            cand --keep-max 'Under --failed-output on-give-up, the most kept of each earlier attempt''s output [default: 1M]'
            cand --metrics-file 'When the run ends, write its figures to PATH in the Prometheus text format'
            cand --report 'When the run ends, write a summary of it to FILE'
            cand --report-format 'The --report''s format [default: json]'
            cand --metrics-job 'The job label of the metrics [default: the command''s file name]'
            cand --label 'Name the command by TEXT in every line retry writes about the run'
            cand --log-format 'Format of retry''s own messages: text, or json (one object per line per event) [default: text]'
            cand --budget 'Take retries from the retry budget NAME, shared by every run that names it'
            cand --budget-ratio 'Retries each first attempt earns, from 0 to 1 [default: 0.1]'
            cand --budget-floor 'Retries allowed per DUR whatever the traffic; DUR is also the budget''s window [default: 10/1m]'
            cand --breaker 'Stop running the command while the circuit breaker NAME is open'
            cand --breaker-threshold 'Failed attempts in a row, across every run, that open the breaker [default: 5]'
            cand --breaker-cooldown 'How long the breaker stays open before a probe may go [default: 1m]'
            cand --state 'Where budgets and breakers live: a directory, or a Redis server [default: $XDG_STATE_HOME/retry]'
            cand -t 'N attempts in all (--attempts N); -1 is no limit'
            cand --times 'N attempts in all (--attempts N); -1 is no limit'
            cand -d 'The delays in seconds, the last repeated (--delays LIST)'
            cand --delay 'The delays in seconds, the last repeated (--delays LIST)'
            cand -u 'Repeat until one of the comma-separated criteria holds'
            cand --until 'Repeat until one of the comma-separated criteria holds'
            cand -w 'Repeat while one of the comma-separated criteria holds'
            cand --while 'Repeat while one of the comma-separated criteria holds'
            cand -m 'Name the command by TEXT in retry''s lines (--label TEXT)'
            cand --message 'Name the command by TEXT in retry''s lines (--label TEXT)'
            cand --forever 'Retry without an attempt limit (usually with --max-time)'
            cand --restart 'Start the command again after a success, after the first delay'
            cand --http 'Judge each attempt by the last HTTP status line it printed, and honour Retry-After'
            cand --honor-retry-after 'A Retry-After header printed by a failed attempt sets the least wait before the next'
            cand --invert 'Swap success and failure: retry until COMMAND fails'
            cand --hold-stdout 'Hold each attempt''s stdout until it ends: only the final attempt''s goes to stdout, the others'' to stderr'
            cand --foreground 'Keep the attempt in retry''s own process group, for commands that read the terminal'
            cand -q 'Print only retry''s own errors'
            cand --quiet 'Print only retry''s own errors'
            cand -v 'Say more: each attempt''s start, the seed, the success'
            cand --verbose 'Say more: each attempt''s start, the seed, the success'
            cand --show-state 'Print the state of the budget and breaker named, and exit (COMMAND optional)'
            cand --reset-state 'Reset the budget and breaker named (a full budget, a closed breaker), and exit'
            cand --dry-run 'Print the planned schedule and exit without running anything'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
    ]
    $completions[$command]
}

use re

# COMMAND and its arguments complete as that command would: after `--`, or from the first word
# that is not an option or an option's value.
set edit:completion:arg-completer[retry] = {|@words|
    var with-values = ['-r' '--retries' '-a' '--attempts' '--max-time' '--timeout' '--timeouts' '--reset-after' '--kill-after' '--kill-signal' '-b' '--base' '--max' '--multiplier' '--backoff' '--delays' '--jitter' '--seed' '--splay' '--retry-on-exit' '--stop-on-exit' '--until-stdout' '--until-stderr' '--retry-if-stdout' '--retry-if-stderr' '--stop-if-stdout' '--stop-if-stderr' '--retry-after-stdout' '--retry-after-stderr' '--retry-after-max' '--consecutive' '--fail-exit' '--on-retry' '--on-failure' '--on-success' '--config' '--profile' '--stdin' '--failed-output' '--keep-max' '--metrics-file' '--report' '--report-format' '--metrics-job' '--label' '--log-format' '--budget' '--budget-ratio' '--budget-floor' '--breaker' '--breaker-threshold' '--breaker-cooldown' '--state' '-t' '--times' '-d' '--delay' '-u' '--until' '-w' '--while' '-m' '--message']
    var i = 1
    var last = (- (count $words) 1)
    while (< $i $last) {
        var word = $words[$i]
        if (eq $word --) {
            set i = (+ $i 1)
            break
        } elif (or (has-value $with-values $word) (re:match '^-[qvhV]*[rabtduwm]$' $word)) {
            set i = (+ $i 2)
        } elif (str:has-prefix $word -) {
            set i = (+ $i 1)
        } else {
            break
        }
    }
    if (> $i $last) {
        # The word under the cursor is an option's value.
    } elif (and (str:has-prefix $words[$i] -) (not-eq $words[(- $i 1)] --)) {
        retry-options $@words
    } else {
        # complete-sudo skips its first word, as it would skip `sudo`.
        var command-line = $words[(- $i 1)..]
        edit:complete-sudo $@command-line
    }
}
