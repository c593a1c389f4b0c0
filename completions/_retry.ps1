
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'retry' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'retry'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'retry' {
            [CompletionResult]::new('-r', '-r', [CompletionResultType]::ParameterName, 'Retries after the first attempt; 0 runs the command once [default: 5]')
            [CompletionResult]::new('--retries', '--retries', [CompletionResultType]::ParameterName, 'Retries after the first attempt; 0 runs the command once [default: 5]')
            [CompletionResult]::new('-a', '-a', [CompletionResultType]::ParameterName, 'Total attempts, at least 1 (another spelling of --retries)')
            [CompletionResult]::new('--attempts', '--attempts', [CompletionResultType]::ParameterName, 'Total attempts, at least 1 (another spelling of --retries)')
            [CompletionResult]::new('--max-time', '--max-time', [CompletionResultType]::ParameterName, 'Deadline for the whole run, measured from start; 0 disables it [default: none]')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Time limit for one attempt; 0 disables it [default: none]')
            [CompletionResult]::new('--timeouts', '--timeouts', [CompletionResultType]::ParameterName, 'Time limits per attempt as a list: attempt n gets entry n')
            [CompletionResult]::new('--reset-after', '--reset-after', [CompletionResultType]::ParameterName, 'An attempt that ran at least this long starts the schedule and the attempt limit afresh')
            [CompletionResult]::new('--kill-after', '--kill-after', [CompletionResultType]::ParameterName, 'Grace between the terminating signal and SIGKILL [default: 2s]')
            [CompletionResult]::new('--kill-signal', '--kill-signal', [CompletionResultType]::ParameterName, 'Signal that terminates an attempt: a name (TERM, SIGINT, RTMIN+1) or a number [default: TERM]')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'First nominal delay (for ethernet: the slot time) [default: 1s]')
            [CompletionResult]::new('--base', '--base', [CompletionResultType]::ParameterName, 'First nominal delay (for ethernet: the slot time) [default: 1s]')
            [CompletionResult]::new('--max', '--max', [CompletionResultType]::ParameterName, 'Cap on any single delay, after jitter too [default: 30s, or --base when larger]')
            [CompletionResult]::new('--multiplier', '--multiplier', [CompletionResultType]::ParameterName, 'Growth factor of exponential backoff, at least 1 [default: 2]')
            [CompletionResult]::new('--backoff', '--backoff', [CompletionResultType]::ParameterName, 'How the nominal delay grows [default: exponential]')
            [CompletionResult]::new('--delays', '--delays', [CompletionResultType]::ParameterName, 'The delays as a list, instead of a backoff curve: retry n waits entry n')
            [CompletionResult]::new('--jitter', '--jitter', [CompletionResultType]::ParameterName, 'How delays are randomised [default: equal]')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed for the jitter, so the same flags give the same delays [default: from OS entropy]')
            [CompletionResult]::new('--splay', '--splay', [CompletionResultType]::ParameterName, 'Wait a random time in [0, DUR] before the first attempt [default: none]')
            [CompletionResult]::new('--retry-on-exit', '--retry-on-exit', [CompletionResultType]::ParameterName, 'Retry only these exit codes; any other failure ends the run (e.g. 1,75-78)')
            [CompletionResult]::new('--stop-on-exit', '--stop-on-exit', [CompletionResultType]::ParameterName, 'These exit codes end the run at once, as a permanent failure (e.g. 2,126-127)')
            [CompletionResult]::new('--until-stdout', '--until-stdout', [CompletionResultType]::ParameterName, 'The attempt succeeds exactly when a line of its stdout matches REGEX')
            [CompletionResult]::new('--until-stderr', '--until-stderr', [CompletionResultType]::ParameterName, 'The attempt succeeds exactly when a line of its stderr matches REGEX')
            [CompletionResult]::new('--retry-if-stdout', '--retry-if-stdout', [CompletionResultType]::ParameterName, 'An attempt whose stdout has a line matching REGEX fails (retryably), even if it exited 0')
            [CompletionResult]::new('--retry-if-stderr', '--retry-if-stderr', [CompletionResultType]::ParameterName, 'An attempt whose stderr has a line matching REGEX fails (retryably), even if it exited 0')
            [CompletionResult]::new('--stop-if-stdout', '--stop-if-stdout', [CompletionResultType]::ParameterName, 'An attempt whose stdout has a line matching REGEX fails for good: the run ends at once')
            [CompletionResult]::new('--stop-if-stderr', '--stop-if-stderr', [CompletionResultType]::ParameterName, 'An attempt whose stderr has a line matching REGEX fails for good: the run ends at once')
            [CompletionResult]::new('--retry-after-stdout', '--retry-after-stdout', [CompletionResultType]::ParameterName, 'A hint in the command''s own format on stdout: the first group of REGEX (else the match)')
            [CompletionResult]::new('--retry-after-stderr', '--retry-after-stderr', [CompletionResultType]::ParameterName, 'A hint in the command''s own format on stderr: the first group of REGEX (else the match)')
            [CompletionResult]::new('--retry-after-max', '--retry-after-max', [CompletionResultType]::ParameterName, 'The longest wait a hint may ask for; a longer hint is cut to it [default: 5m]')
            [CompletionResult]::new('--consecutive', '--consecutive', [CompletionResultType]::ParameterName, 'Succeed only after N successful attempts in a row [default: 1]')
            [CompletionResult]::new('--fail-exit', '--fail-exit', [CompletionResultType]::ParameterName, 'Exit with N instead of the failed run''s status (e.g. 1 for Docker''s HEALTHCHECK)')
            [CompletionResult]::new('--on-retry', '--on-retry', [CompletionResultType]::ParameterName, 'Run CMD through `sh -c` before each retry''s wait')
            [CompletionResult]::new('--on-failure', '--on-failure', [CompletionResultType]::ParameterName, 'Run CMD through `sh -c` once when retry gives up')
            [CompletionResult]::new('--on-success', '--on-success', [CompletionResultType]::ParameterName, 'Run CMD through `sh -c` once when the run succeeds')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Read settings from FILE instead of $RETRY_CONFIG or $XDG_CONFIG_HOME/retry/config.toml')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Apply [profile.NAME] of the config file over its [defaults] [env: RETRY_PROFILE]')
            [CompletionResult]::new('--stdin', '--stdin', [CompletionResultType]::ParameterName, 'What each attempt reads on stdin [default: auto]')
            [CompletionResult]::new('--failed-output', '--failed-output', [CompletionResultType]::ParameterName, 'What becomes of the output of failed attempts that another follows [default: pass]')
            [CompletionResult]::new('--keep-max', '--keep-max', [CompletionResultType]::ParameterName, 'Under --failed-output on-give-up, the most kept of each earlier attempt''s output [default: 1M]')
            [CompletionResult]::new('--metrics-file', '--metrics-file', [CompletionResultType]::ParameterName, 'When the run ends, write its figures to PATH in the Prometheus text format')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'When the run ends, write a summary of it to FILE')
            [CompletionResult]::new('--report-format', '--report-format', [CompletionResultType]::ParameterName, 'The --report''s format [default: json]')
            [CompletionResult]::new('--metrics-job', '--metrics-job', [CompletionResultType]::ParameterName, 'The job label of the metrics [default: the command''s file name]')
            [CompletionResult]::new('--label', '--label', [CompletionResultType]::ParameterName, 'Name the command by TEXT in every line retry writes about the run')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Format of retry''s own messages: text, or json (one object per line per event) [default: text]')
            [CompletionResult]::new('--budget', '--budget', [CompletionResultType]::ParameterName, 'Take retries from the retry budget NAME, shared by every run that names it')
            [CompletionResult]::new('--budget-ratio', '--budget-ratio', [CompletionResultType]::ParameterName, 'Retries each first attempt earns, from 0 to 1 [default: 0.1]')
            [CompletionResult]::new('--budget-floor', '--budget-floor', [CompletionResultType]::ParameterName, 'Retries allowed per DUR whatever the traffic; DUR is also the budget''s window [default: 10/1m]')
            [CompletionResult]::new('--breaker', '--breaker', [CompletionResultType]::ParameterName, 'Stop running the command while the circuit breaker NAME is open')
            [CompletionResult]::new('--breaker-threshold', '--breaker-threshold', [CompletionResultType]::ParameterName, 'Failed attempts in a row, across every run, that open the breaker [default: 5]')
            [CompletionResult]::new('--breaker-cooldown', '--breaker-cooldown', [CompletionResultType]::ParameterName, 'How long the breaker stays open before a probe may go [default: 1m]')
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'Where budgets and breakers live: a directory, or a Redis server [default: $XDG_STATE_HOME/retry]')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'N attempts in all (--attempts N); -1 is no limit')
            [CompletionResult]::new('--times', '--times', [CompletionResultType]::ParameterName, 'N attempts in all (--attempts N); -1 is no limit')
            [CompletionResult]::new('-d', '-d', [CompletionResultType]::ParameterName, 'The delays in seconds, the last repeated (--delays LIST)')
            [CompletionResult]::new('--delay', '--delay', [CompletionResultType]::ParameterName, 'The delays in seconds, the last repeated (--delays LIST)')
            [CompletionResult]::new('-u', '-u', [CompletionResultType]::ParameterName, 'Repeat until one of the comma-separated criteria holds')
            [CompletionResult]::new('--until', '--until', [CompletionResultType]::ParameterName, 'Repeat until one of the comma-separated criteria holds')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'Repeat while one of the comma-separated criteria holds')
            [CompletionResult]::new('--while', '--while', [CompletionResultType]::ParameterName, 'Repeat while one of the comma-separated criteria holds')
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'Name the command by TEXT in retry''s lines (--label TEXT)')
            [CompletionResult]::new('--message', '--message', [CompletionResultType]::ParameterName, 'Name the command by TEXT in retry''s lines (--label TEXT)')
            [CompletionResult]::new('--forever', '--forever', [CompletionResultType]::ParameterName, 'Retry without an attempt limit (usually with --max-time)')
            [CompletionResult]::new('--restart', '--restart', [CompletionResultType]::ParameterName, 'Start the command again after a success, after the first delay')
            [CompletionResult]::new('--http', '--http', [CompletionResultType]::ParameterName, 'Judge each attempt by the last HTTP status line it printed, and honour Retry-After')
            [CompletionResult]::new('--honor-retry-after', '--honor-retry-after', [CompletionResultType]::ParameterName, 'A Retry-After header printed by a failed attempt sets the least wait before the next')
            [CompletionResult]::new('--invert', '--invert', [CompletionResultType]::ParameterName, 'Swap success and failure: retry until COMMAND fails')
            [CompletionResult]::new('--hold-stdout', '--hold-stdout', [CompletionResultType]::ParameterName, 'Hold each attempt''s stdout until it ends: only the final attempt''s goes to stdout, the others'' to stderr')
            [CompletionResult]::new('--foreground', '--foreground', [CompletionResultType]::ParameterName, 'Keep the attempt in retry''s own process group, for commands that read the terminal')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only retry''s own errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only retry''s own errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Say more: each attempt''s start, the seed, the success')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Say more: each attempt''s start, the seed, the success')
            [CompletionResult]::new('--show-state', '--show-state', [CompletionResultType]::ParameterName, 'Print the state of the budget and breaker named, and exit (COMMAND optional)')
            [CompletionResult]::new('--reset-state', '--reset-state', [CompletionResultType]::ParameterName, 'Reset the budget and breaker named (a full budget, a closed breaker), and exit')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print the planned schedule and exit without running anything')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
