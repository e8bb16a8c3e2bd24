# kardwt: `git kardwt` in this shell, where `kardwt switch <card> [add's options]` also goes
# to the card's tree. Printed by `git kardwt shell init`; eval it from the shell's startup file.
kardwt() {
    if [ "${1-}" != switch ]; then
        command git kardwt "$@"
        return
    fi
    shift
    local __kardwt_out __kardwt_code
    __kardwt_out=$(command git kardwt add "$@") && __kardwt_code=0 || __kardwt_code=$?
    # add prints the tree's absolute path alone on a line; anything else it printed (--json,
    # --help) is shown as it came, and the shell stays where it is.
    case "$__kardwt_out" in
        *"
"*) ;;
        /*)
            if [ "$__kardwt_code" -eq 0 ] && [ -d "$__kardwt_out" ]; then
                builtin cd -- "$__kardwt_out"
                return
            fi
            ;;
    esac
    if [ -n "$__kardwt_out" ]; then printf '%s\n' "$__kardwt_out"; fi
    return "$__kardwt_code"
}
