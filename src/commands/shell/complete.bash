
# Completion of `kardwt`: subcommands, and after `switch` the card ids of the repository you
# stand in (`git kardwt shell cards`) and add's options; the rest through the completion of
# `git kardwt completions bash` when it is loaded.
_kardwt() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "switch @SUBCOMMANDS@" -- "$cur"))
        return 0
    fi
    if [ "${COMP_WORDS[1]}" = switch ]; then
        case "$prev" in @VALUED@) return 0 ;; esac
        case "$cur" in
            -*) COMPREPLY=($(compgen -W "@OPTIONS@" -- "$cur")) ;;
            # Each id as a word of its own, compared as text: compgen -W would expand what it
            # is given, so nothing read from the repository is ever handed to it.
            *)
                local card
                while IFS= read -r card; do
                    case "$card" in "$cur"*) COMPREPLY+=("$card") ;; esac
                done < <(command git kardwt shell cards 2>/dev/null)
                ;;
        esac
        return 0
    fi
    if declare -F _git__kardwt >/dev/null; then
        local COMP_WORDS=(git-kardwt "${COMP_WORDS[@]:1}")
        _git__kardwt git-kardwt "$cur" "$prev"
    fi
}
complete -F _kardwt kardwt
