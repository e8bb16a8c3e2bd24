
# Completion of `kardwt`: subcommands, and after `switch` the card ids of the repository you
# stand in (`git kardwt shell cards`) and add's options. Registered when compinit has run.
_kardwt() {
    if (( CURRENT == 2 )); then
        compadd -- switch @SUBCOMMANDS@
        return
    fi
    [[ ${words[2]} == switch ]] || return 1
    case ${words[CURRENT-1]} in @VALUED@) return 1 ;; esac
    if [[ $PREFIX == -* ]]; then
        compadd -- @OPTIONS@
    else
        compadd -- ${(f)"$(command git kardwt shell cards 2>/dev/null)"}
    fi
}
if (( $+functions[compdef] )); then compdef _kardwt kardwt; fi
