package node

import "strings"

// PromptCommand recognises the line of a pasted terminal session that ran
// tool, and returns the words after the tool's name. Captures come from
// people's terminals and mails, so the prompt before the command is
// whatever their shell printed: "$ ", "# ", "root@host:~# ",
// "[root@host ~]# ", "user@host:~$ sudo ", or MLNX_OFED's documentation's
// "$mlnx_qos" with no space. Without a prompt, the bare command counts too
// ("mlnx_qos -i eth2" as a file's first line). ok is false for any other
// line, so an output line that merely mentions the tool is never taken
// for a command.
func PromptCommand(line, tool string) (args []string, ok bool) {
	f := strings.Fields(line)
	for i, w := range f {
		name := w
		glued := false
		if p := strings.TrimLeft(w, "$#>%"); p != w && i == 0 {
			// "$mlnx_qos": the prompt glued to the command.
			name, glued = p, true
		}
		if name[strings.LastIndexByte(name, '/')+1:] != tool {
			continue
		}
		if glued || isPrompt(f[:i]) {
			return f[i+1:], true
		}
		return nil, false
	}
	return nil, false
}

// isPrompt reports whether the words before a command are a shell prompt,
// optionally followed by sudo (with its options).
func isPrompt(words []string) bool {
	for len(words) > 0 {
		last := words[len(words)-1]
		if last != "sudo" && !strings.HasPrefix(last, "-") {
			break
		}
		words = words[:len(words)-1]
	}
	if len(words) == 0 {
		return true
	}
	p := strings.Join(words, " ")
	switch p[len(p)-1] {
	case '$', '#', '>', '%':
		// "$", "#", "root@host:~#", "[root@host ~]#", "~>": a prompt
		// ends with its sign, and holds no spaces but inside brackets.
		return !strings.ContainsAny(strings.Trim(p, "[]"), " \t") || strings.HasPrefix(p, "[")
	}
	return false
}
