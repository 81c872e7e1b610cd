-- The chat: a prompt streamed into the chat buffer, tool-call lines, the
-- plan, usage; and read_file seeing an unsaved buffer.
return {
  {
    name = 'chat: a prompt streams into the chat with a tool line and the plan',
    run = function(H)
      H.workspace()
      H.model('chat.txtar')
      H.setup()
      vim.cmd('edit calc/calc.go')
      local c = H.wait_client()
      -- one client per root, attached to every file buffer, whatever its type
      vim.cmd('edit README.md')
      vim.cmd('edit go.mod')
      vim.cmd('edit calc/calc.go')
      H.eq(1, #require('qwen.util').get_clients('qwen'), 'one qwen client for the root')
      for _, f in ipairs({ 'README.md', 'go.mod', 'calc/calc.go' }) do
        H.ok(vim.lsp.buf_is_attached(vim.fn.bufnr(f), c.id), f .. ' attached')
      end
      H.type_prompt('Summarise the calc package')
      local res = H.wait_turn()
      H.eq('end_turn', res.stopReason, 'stop reason')
      local text = table.concat(H.chat_lines(), '\n')
      H.contains(text, '## You\n\nSummarise the calc package', 'the prompt')
      H.contains(text, "I'll make a short plan first.", 'streamed text')
      H.contains(text, '`calc.go` has **two** functions:', 'the markdown answer')
      H.contains(text, '- `Scale` multiplies every price by a factor.', 'the markdown answer')
      -- the plan, kept up to date: both entries completed after the second todo_write
      H.contains(text, '**Plan**', 'the plan')
      H.contains(text, '- [x] Read calc/calc.go', 'the plan, updated')
      H.contains(text, '- [x] Summarise the package', 'the plan, updated')
      H.ok(not text:find('[ ] Summarise', 1, true), 'the stale plan to be replaced')
      local _, plans = text:gsub('%*%*Plan%*%*', '')
      H.eq(1, plans, 'one plan block')
      -- a compact tool line with its status
      local lines = H.chat_lines()
      local tool_line
      for i, l in ipairs(lines) do
        if l:find('calc/calc.go', 1, true) and l:find('(completed)', 1, true) and l:find('▸', 1, true) then
          tool_line = i
        end
      end
      H.ok(tool_line, 'a collapsed read_file line with status completed:\n' .. text)
      -- usage at the end of the turn
      H.contains(lines[#lines - 1], '— end_turn · tokens 4600 in, 150 out · session 4600 in, 150 out', 'usage line')
      -- expanding the tool line shows its output
      local chat = require('qwen.chat')
      vim.api.nvim_set_current_win(vim.fn.bufwinid(chat.buf))
      vim.api.nvim_win_set_cursor(0, { tool_line, 0 })
      H.feed('<CR>')
      local after = H.chat_lines()
      H.contains(after[tool_line], '▾', 'expanded marker')
      H.contains(table.concat(after, '\n'), '    absolute_path: ' .. H.ws .. '/calc/calc.go', 'the tool input')
      H.feed('<CR>')
      H.eq(#lines, #H.chat_lines(), 'collapsed again')
      H.eq('qwen: idle [default] · scripted', require('qwen').statusline(), 'statusline')
    end,
  },
  {
    name = 'chat: read_file sees an unsaved buffer',
    run = function(H)
      local ws = H.start('unsaved-read.txtar', 'main.go')
      vim.api.nvim_buf_set_lines(0, 9, 10, false, { '\tfmt.Println(calc.Add(40, 2)) // unsaved' })
      H.ok(vim.bo.modified, 'the buffer to be modified')
      vim.cmd('QwenAsk What does main.go do?')
      local res = H.wait_turn()
      H.eq('end_turn', res.stopReason, 'stop reason')
      local result = H.ok(H.tool_result('call_read1'), 'a read_file result')
      H.contains(result, 'calc.Add(40, 2)) // unsaved', 'the unsaved text in the tool result')
      H.ok(not H.read(ws .. '/main.go'):find('unsaved', 1, true), 'the disk to be untouched')
      H.contains(H.chat_lines(), 'I read main.go as it is in your editor.', 'the answer')
    end,
  },
  {
    name = 'chat: QwenAsk with a range sends the selection and didFocus',
    run = function(H)
      H.start('unsaved-read.txtar', 'calc/calc.go')
      vim.cmd('8,9QwenAsk Explain these lines')
      H.wait_turn()
      local first = H.requests()[1]
      local all = {}
      for _, m in ipairs(first.messages) do
        if m.role == 'user' then
          table.insert(all, m.content or '')
        end
      end
      local user = table.concat(all, '\n')
      H.contains(user, 'Explain these lines', 'the prompt')
      H.contains(user, 'func Scale(prices []int, factor int) []int {', 'the selected lines')
      H.contains(user, 'calc/calc.go', 'the focused file')
      H.contains(H.chat_lines(), 'with calc/calc.go lines 8-9', 'the transcript names the selection')
    end,
  },
  {
    name = "chat: :'<,'>QwenAsk after a Visual selection sends the lines once",
    run = function(H)
      H.start('unsaved-read.txtar', 'calc/calc.go')
      vim.api.nvim_win_set_cursor(0, { 8, 0 })
      -- Visual mode left for the command line: the selection goes out as
      -- the focus first, as when the person types :'<,'>
      H.feed('Vj<Esc>')
      vim.wait(200, function() return false end, 20)
      vim.cmd("'<,'>QwenAsk Explain these lines")
      H.wait_turn()
      local user = {}
      for _, m in ipairs(H.requests()[1].messages) do
        if m.role == 'user' then
          table.insert(user, m.content or '')
        end
      end
      local text = table.concat(user, '\n')
      local _, n = text:gsub(vim.pesc('func Scale(prices []int, factor int) []int {'), '')
      H.eq(1, n, 'the selected lines in the prompt, counted:\n' .. text)
    end,
  },
  {
    name = 'chat: a Visual selection is sent with qwen/didFocus',
    run = function(H)
      H.start('unsaved-read.txtar', 'calc/calc.go')
      vim.api.nvim_win_set_cursor(0, { 3, 0 })
      H.feed('Vj<Esc>')
      -- the selection goes out once Visual mode is left
      vim.wait(200, function() return false end, 20)
      H.type_prompt('What do these lines do?')
      H.wait_turn()
      local user = {}
      for _, m in ipairs(H.requests()[1].messages) do
        if m.role == 'user' then
          table.insert(user, m.content or '')
        end
      end
      local text = table.concat(user, '\n')
      H.contains(text, '// Add returns the sum of a and b.', 'the first selected line')
      H.contains(text, 'func Add(a, b int) int {', 'the second selected line')
    end,
  },
}
