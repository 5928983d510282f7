
#compdef ascendtune

_ascendtune_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _ASCENDTUNE_COMPLETE=complete_zsh ascendtune)
}

compdef _ascendtune_completion ascendtune

