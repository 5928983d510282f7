#compdef ascendtune

_ascendtune_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _ASCENDTUNE_COMPLETE=complete_zsh ascendtune)
}

if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then
  # autoloaded from $fpath as _ascendtune: complete this first TAB too
  _ascendtune_completion "$@"
else
  compdef _ascendtune_completion ascendtune
fi
