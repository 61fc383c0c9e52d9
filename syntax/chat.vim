" flemma: syntax of .chat buffers. Every group is a Flemma* group, linked
" to a standard group in plugin/flemma.lua (restored after :colorscheme).
" Message text is Markdown: Markdown's own syntax file underneath, unless
" the buffer uses the treesitter markdown parser (lua/flemma/chatbuf.lua).
" Items defined later win where several start at the same place, so
" flemma's items come after Markdown's.
if exists('b:current_syntax')
  finish
endif

let s:mode = luaeval('require("flemma.chatbuf").markdown_mode(' . bufnr('%') . ')')
if s:mode ==# 'syntax'
  " Markdown's own conceal (**, inline backticks, links) stays off:
  " chat.conceal_fences hides the fences' backticks only.
  let s:markdown_conceal = get(g:, 'markdown_syntax_conceal', 1)
  let g:markdown_syntax_conceal = 0
  runtime! syntax/markdown.vim
  let g:markdown_syntax_conceal = s:markdown_conceal
  unlet! b:current_syntax
endif
let s:conceal = luaeval('require("flemma.state").config().chat.conceal_fences') ? ' concealends' : ''

" Frontmatter on line 1, with Lua's syntax inside a ```lua one.
syntax include @FlemmaLua syntax/lua.vim
unlet! b:current_syntax

" Code fences (at least three backticks at column 1, no backtick after
" them), as the host's parser reads them: roles and headers inside are text.
execute 'syntax region FlemmaCode matchgroup=FlemmaFence'
      \ 'start=/^\z(`\{3,}\)\ze[^`]*$/ end=/^\z1`*\s*$/'
      \ 'contains=FlemmaFenceInfo' s:conceal
syntax match FlemmaFenceInfo /\%(^`\{3,}\)\@<=[^`]\+$/ contained contains=FlemmaToolFence
syntax match FlemmaToolFence /\<flemma:tool\>.*$/ contained
      \ contains=FlemmaStatusPending,FlemmaStatusApproved,FlemmaStatusRejected,FlemmaStatusDenied,FlemmaStatusAborted
syntax match FlemmaStatusPending /\<status=pending\>/ contained
syntax match FlemmaStatusApproved /\<status=approved\>/ contained
syntax match FlemmaStatusRejected /\<status=rejected\>/ contained
syntax match FlemmaStatusDenied /\<status=denied\>/ contained
syntax match FlemmaStatusAborted /\<status=aborted\>/ contained

" Roles: a whole line.
syntax match FlemmaRoleYou /^@You:\s*$/
syntax match FlemmaRoleAssistant /^@Assistant:\s*$/
syntax match FlemmaRoleSystem /^@System:\s*$/
syntax match FlemmaRole /^@\%(You:\|Assistant:\|System:\)\@![A-Za-z0-9]\+:\s*$/

" Tool headers.
syntax match FlemmaToolUse /^\*\*Tool Use:\*\*\s*`[^`]\+`\s*(`[^)]\+`).*$/
      \ contains=FlemmaToolLabel,FlemmaToolName,FlemmaToolId
syntax match FlemmaToolResult /^\*\*Tool Result:\*\*\s*`[^`]\+`.*$/
      \ contains=FlemmaToolLabel,FlemmaToolId,FlemmaToolError,FlemmaLegacyStatus
syntax match FlemmaToolLabel /^\*\*Tool \%(Use\|Result\):\*\*/ contained
syntax match FlemmaToolName /\%(Use:\*\*\s*\)\@<=`[^`]\+`/ contained
syntax match FlemmaToolId /\%((\|Result:\*\*\s*\)\@<=`[^`)]\+`/ contained
syntax match FlemmaToolError /(error)\s*$/ contained
" The Lua Flemma's header form: `id` (pending) …
syntax match FlemmaLegacyStatus /(\s*\%(status=\)\?\%(pending\|approved\|rejected\|denied\|aborted\)\>.*)\s*$/
      \ contained contains=FlemmaStatusWordPending,FlemmaStatusWordApproved,FlemmaStatusWordRejected,FlemmaStatusWordDenied,FlemmaStatusWordAborted
syntax match FlemmaStatusWordPending /\<pending\>/ contained
syntax match FlemmaStatusWordApproved /\<approved\>/ contained
syntax match FlemmaStatusWordRejected /\<rejected\>/ contained
syntax match FlemmaStatusWordDenied /\<denied\>/ contained
syntax match FlemmaStatusWordAborted /\<aborted\>/ contained

" Thinking: <thinking>, <thinking redacted>, <thinking p:signature="…"> up
" to </thinking> (outside a fence); the self-closing tag on one line.
syntax region FlemmaThinking matchgroup=FlemmaThinkingTag
      \ start=/^<thinking\%(\s\+redacted\|\s\+[A-Za-z0-9]\+:signature="[^"]*"\s*\)\=>$/
      \ end=/^<\/thinking>$/ contains=FlemmaCode
syntax match FlemmaThinkingTag /^<thinking\s\+[A-Za-z0-9]\+:signature="[^"]*"\s*\/>$/

" The marker of an interrupted response, a compaction summary's markers, and
" the model's escaped lines.
syntax match FlemmaAborted /^<!--\s*flemma:aborted:.*-->$/
syntax match FlemmaSummary /^<!--\s*\/\=flemma:summary\%(:.*\)\=\s*-->$/
syntax match FlemmaEscape /^\\\ze\%(@[A-Za-z0-9]\+:\s*$\|\*\*Tool \%(Use\|Result\):\*\*\|<\/\=thinking\|<!--\s*\/\=flemma:\)/

execute 'syntax region FlemmaFrontmatter matchgroup=FlemmaFrontmatterFence'
      \ 'start=/\%1l^```[A-Za-z0-9]\+\s*$/ end=/^```\s*$/ keepend contains=@FlemmaLua' s:conceal

" Sync at role lines: a long conversation is not parsed from its start.
syntax sync clear
syntax sync match FlemmaSync grouphere NONE /^@[A-Za-z0-9]\+:\s*$/
syntax sync minlines=50 maxlines=3000

let b:current_syntax = 'chat'
