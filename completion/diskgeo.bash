# SPDX-License-Identifier: MIT
# bash completion for diskgeo and diskgeo-simdisk (installed under both names in
# share/bash-completion/completions). Commands, each command's options (read from its own
# --help, so they never drift), option values (engines, files, directories), built-in drive
# names (from `diskgeo model --list`), sim:NAME devices and block devices.

# The built-in drive names, one per line.
_diskgeo_presets()
{
	"${1:-diskgeo}" model --list 2>/dev/null | awk 'NF { print $1 }'
}

# Block devices as /dev paths: whole disks and partitions (loop devices only when attached).
_diskgeo_block_devices()
{
	local d name
	for d in /sys/class/block/*; do
		[ -e "$d" ] || continue
		name=${d##*/}
		case $name in
		loop*) [ -e "$d/loop/backing_file" ] || continue ;;
		ram* | zram*) continue ;;
		esac
		[ -b "/dev/$name" ] && printf '/dev/%s\n' "$name"
	done
}

# The long and short options a command's --help lists.
_diskgeo_options()
{
	"$1" "$2" --help 2>/dev/null |
		grep -oE -- '(^|[ ,])(--[a-z][a-z0-9-]*|-[a-zA-Z])' | tr -d ' ,' | sort -u
}

_diskgeo()
{
	local cur prev words cword prog cmd i
	if declare -F _init_completion >/dev/null; then
		_init_completion -n = || return
	else
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD - 1]}
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
	fi
	prog=${words[0]}
	cmd=""
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		-*) ;;
		*)
			cmd=${words[i]}
			break
			;;
		esac
	done

	if [ -z "$cmd" ]; then
		COMPREPLY=($(compgen -W "probe read bandwidth seek sweep geometry profile model --help --version" -- "$cur"))
		return
	fi

	case $prev in
	--engine)
		COMPREPLY=($(compgen -W "io_uring psync sim auto" -- "$cur"))
		return
		;;
	-j | --json | --csv)
		COMPREPLY=($(compgen -f -- "$cur"))
		[ -z "$cur" ] && COMPREPLY+=("-")
		return
		;;
	--csv-dir)
		COMPREPLY=($(compgen -d -- "$cur"))
		return
		;;
	-n | -s | -r | -o | -l | -b | -Q | -d | --samples | --sample-size | --range | --passes | \
		--time-budget | --bandwidth-budget | --seek-budget | --qd | --seed | --distances | \
		--seek-samples | --block-size | --offset | --length | --span | --confirm-destroy | \
		--seq-blocks | --rand-blocks | --seq-bytes | --ios | --rmw-ios | --sweep-budget | \
		--sweep-seq-blocks | --sweep-rand-blocks | --sweep-qd | --places | --geometry-budget)
		return # a value: nothing to offer
		;;
	esac

	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_diskgeo_options "$prog" "$cmd")" -- "$cur"))
		return
	fi
	case $cmd in
	model)
		COMPREPLY=($(compgen -W "$(_diskgeo_presets "$prog")" -- "$cur"))
		COMPREPLY+=($(compgen -f -X '!*.json' -- "$cur") $(compgen -d -- "$cur"))
		;;
	probe | read | bandwidth | seek | sweep | geometry | profile)
		if [[ $cur == sim:* ]]; then
			COMPREPLY=($(compgen -P sim: -W "$(_diskgeo_presets "$prog")" -- "${cur#sim:}"))
			COMPREPLY+=($(compgen -P sim: -f -X '!*.json' -- "${cur#sim:}"))
		else
			COMPREPLY=($(compgen -W "$(_diskgeo_block_devices) sim:" -- "$cur"))
			COMPREPLY+=($(compgen -f -- "$cur"))
		fi
		[ ${#COMPREPLY[@]} = 1 ] && [[ ${COMPREPLY[0]} == sim: ]] && compopt -o nospace 2>/dev/null
		;;
	esac
}

_diskgeo_simdisk()
{
	local cur prev words cword cmd diskgeo
	if declare -F _init_completion >/dev/null; then
		_init_completion || return
	else
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD - 1]}
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
	fi
	# the diskgeo beside this diskgeo-simdisk names the presets
	diskgeo=${words[0]%diskgeo-simdisk}diskgeo
	[ -x "$diskgeo" ] || diskgeo=diskgeo
	if [ "$cword" = 1 ]; then
		COMPREPLY=($(compgen -W "attach detach list serve --help --version" -- "$cur"))
		return
	fi
	cmd=${words[1]}
	if [ "$cword" = 2 ]; then
		case $cmd in
		attach | serve)
			COMPREPLY=($(compgen -W "$(_diskgeo_presets "$diskgeo") --help" -- "$cur"))
			COMPREPLY+=($(compgen -f -X '!*.json' -- "$cur"))
			;;
		detach)
			COMPREPLY=($(compgen -W "$("${words[0]}" list 2>/dev/null | awk '$1 != "-" { print $1 }') --help" -- "$cur"))
			;;
		list) COMPREPLY=($(compgen -W "--help" -- "$cur")) ;;
		esac
	elif [ "$cword" = 3 ] && [ "$cmd" = serve ]; then
		COMPREPLY=($(compgen -d -- "$cur"))
	fi
}

complete -F _diskgeo diskgeo
complete -F _diskgeo_simdisk diskgeo-simdisk
