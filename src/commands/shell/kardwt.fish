# kardwt: `git kardwt` in this shell, where `kardwt switch <card> [add's options]` also goes
# to the card's tree. Printed by `git kardwt shell init fish`; source it from config.fish.
function kardwt --description "git kardwt; kardwt switch <card> goes to the card's tree"
    if test "$argv[1]" != switch
        command git kardwt $argv
        return
    end
    set -l args $argv
    set -e args[1]
    set -l out (command git kardwt add $args)
    set -l code $status
    # add prints the tree's absolute path alone on a line; anything else it printed (--json,
    # --help) is shown as it came, and the shell stays where it is.
    if test $code -eq 0; and test (count $out) -eq 1; and string match -q -- '/*' $out; and test -d $out
        cd -- $out
        return
    end
    if test (count $out) -gt 0
        printf '%s\n' $out
    end
    return $code
end

# Completion: subcommands, and after `switch` the card ids of the repository you stand in
# (`git kardwt shell cards`) and add's options.
function __kardwt_switching
    set -l words (commandline -opc)
    test (count $words) -ge 2; and test "$words[2]" = switch
end
complete -c kardwt -f
complete -c kardwt -n 'test (count (commandline -opc)) -eq 1' -a 'switch @SUBCOMMANDS@'
complete -c kardwt -n __kardwt_switching -a '(command git kardwt shell cards 2>/dev/null)' -d card
@OPTIONS@
