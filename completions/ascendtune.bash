# ascendtune completion for bash. Plain bash is enough (no bash-completion package):
#   source /path/to/completions/ascendtune.bash   # in ~/.bashrc

_ascendtune_completion() {
    local IFS=$'
'
    COMPREPLY=( $( env COMP_WORDS="${COMP_WORDS[*]}" \
                   COMP_CWORD=$COMP_CWORD \
                   _ASCENDTUNE_COMPLETE=complete_bash $1 ) )
    return 0
}

complete -o default -F _ascendtune_completion ascendtune
