# bash completion for gpureap, for gpureap-status (the served 'gpureap status' as a program of its
# own: its words are those of 'gpureap status') and for gpureap-run (those of 'gpureap run').
# bash-completion loads this file by the command's name: gpureap-status and gpureap-run are links
# to it in the completions directory
_gpureap()
{
        local cur prev cmd i
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD-1]}
        local commands="status reap wait run reset check metrics serve slurm-prolog slurm-epilog"
        cmd=
        case ${COMP_WORDS[0]##*/} in
        gpureap-status) cmd=status ;;
        gpureap-run) cmd=run ;;
        esac
        for ((i = 1; i < COMP_CWORD && !${#cmd}; i++)); do
                case ${COMP_WORDS[i]} in
                -*) ;;
                *) cmd=${COMP_WORDS[i]}; break ;;
                esac
        done
        if [ "$cmd" = run ]; then
                for ((i = 1; i < COMP_CWORD; i++)); do
                        if [ "${COMP_WORDS[i]}" = -- ]; then
                                _command_offset $((i + 1))
                                return
                        fi
                done
        fi
        # --color=WHEN: bash splits the word at '=' (COMP_WORDBREAKS)
        if [ "$prev" = --color ] || { [ "$prev" = = ] && [ "${COMP_WORDS[COMP_CWORD-2]}" = --color ]; }; then
                COMPREPLY=($(compgen -W "auto always never" -- "$cur"))
                return
        fi
        if [ "$cmd" = run ] && { [ "$prev" = --tty ] || { [ "$prev" = = ] && [ "${COMP_WORDS[COMP_CWORD-2]}" = --tty ]; }; }; then
                COMPREPLY=($(compgen -W "auto always never" -- "$cur"))
                return
        fi
        if [ "$cmd" = run ] && { [ "$prev" = --json ] || [ "$prev" = --ready-file ]; }; then
                COMPREPLY=($(compgen -f -- "$cur"))
                return
        fi
        case $prev in
        --replay | --textfile | --kubelet-socket)
                COMPREPLY=($(compgen -f -- "$cur"))
                return ;;
        --format)
                COMPREPLY=($(compgen -W "nagios npd" -- "$cur"))
                return ;;
        --user)
                COMPREPLY=($(compgen -u -- "$cur"))
                return ;;
        --gpu | -i | --gpus | --pid | --job | --cgroup | --container | --pod | --grace | --timeout | \
        --nvml-timeout | --watch | -l | --free | --max-time | --ready-port | --ready-log | --ready-timeout | \
        --stall-timeout | --drain-timeout | --scontrol | --node | --only | --reap-after | \
        --remap-exit | --rewrite-signal | --parent-death-signal)
                return ;;
        esac
        local opts
        case $cmd in
        "" | status) opts="--json --why --wide --color --gpu -i --watch -l --replay --direct --job --cgroup --container --pod --kubelet-socket --nvml-timeout --help" ;;
        reap) opts="--dry-run --direct --yes --json --gpu -i --pid --likely --all --tree --user --all-users --grace --timeout --job --cgroup --container --pod --ended --only --nvml-timeout --help" ;;
        wait) opts="--gpu -i --free --timeout --json --direct --job --cgroup --container --pod --nvml-timeout --help" ;;
        run) opts="--grace --max-time --ready-port --ready-log --ready-timeout --stall-timeout --drain-timeout --no-cgroup --tty --quiet --json --ready-file --remap-exit --signal-group --rewrite-signal --parent-death-signal --verbose --help --" ;;
        reset) opts="--gpu -i --yes --stop-monitors --timeout --help" ;;
        check) opts="--format --gpu -i --timeout --nvml-timeout --direct --replay --kubelet-socket --help" ;;
        metrics) opts="--textfile --gpu --nvml-timeout --replay --kubelet-socket --help" ;;
        serve) opts="--socket --group --interval --listen --nvml-timeout --reap-after --reap-all-users --process-metrics --kubelet-socket --help" ;;
        slurm-prolog | slurm-epilog) opts="--drain --gpus --timeout --grace --scontrol --node --help" ;;
        esac
        if [ -z "$cmd" ] && [[ $cur != -* ]]; then
                COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        else
                COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        fi
}
complete -F _gpureap gpureap gpureap-status gpureap-run
