-- Replays equal live: a session loaded in a new qwen-ls shows what the
-- person saw while it ran, rendered by the same code: a custom command as
-- typed (not its expansion), the tool calls' titles, a partial review's
-- "2 of 3 changes kept", and an undone turn's edit marked undone.

-- The transcript without blank lines and the plugin's own notes (the
-- turn's end line, the undo's report), which are the client's words
-- about the live session rather than the session itself.
local function transcript(H)
  return vim.tbl_filter(function(l)
    return l ~= '' and not l:match('^_')
  end, H.chat_lines())
end

return {
  {
    name = 'replay: a loaded session shows the command as typed, tool titles, a partial review and an undone turn as they were live',
    run = function(H)
      H.workspace()
      -- a user command (no folder trust needed) that brings a file's text
      vim.fn.mkdir(H.home .. '/.qwen/commands', 'p')
      local f = assert(io.open(H.home .. '/.qwen/commands/tidy.toml', 'w'))
      f:write('description = "Tidy a file"\nprompt = """\nTidy the comments of this file, {{args}}:\n@{calc/calc.go}\n"""\n')
      f:close()
      H.model('edit-three-hunks.txtar')
      H.setup()
      vim.cmd('edit calc/calc.go')
      H.wait_client()
      vim.ui.input = function(_, cb)
        vim.schedule(function()
          cb('keep the comment as it is')
        end)
      end
      H.type_prompt('/tidy briefly')
      local r = H.wait_review()
      vim.cmd('QwenReview')
      vim.api.nvim_win_set_cursor(0, { 3, 0 })
      H.feed('\\a')
      H.feed(']h')
      H.feed('\\f')
      H.wait(3000, function()
        return r.hunks[2].state == 'rejected'
      end, 'hunk 2 rejected')
      H.feed(']h')
      H.feed('\\a')
      local res = H.wait_turn()
      H.eq('tidy', res.command, 'the custom command ran')
      local sent = ''
      for _, m in ipairs(H.requests()[1].messages) do
        if m.role == 'user' then
          sent = type(m.content) == 'string' and m.content or vim.json.encode(m.content)
        end
      end
      H.contains(sent, 'package calc', 'the model got the expansion, with the file')
      local edit_line = '▸ ✓ calc/calc.go: // Add returns the sum of a an... => // Add returns a + b....  (2 of 3 changes kept)'
      H.contains(H.chat_lines(), edit_line, 'the partial review, live')

      -- undo the turn: the edit's line says so at once
      local undone
      require('qwen.session').undo_turn(function(err)
        undone = { err = err }
      end)
      H.wait(5000, function()
        return undone ~= nil
      end, 'the undo')
      H.eq(nil, undone.err, 'the undo worked')
      local undone_line = '▸ ↶ calc/calc.go: // Add returns the sum of a an... => // Add returns a + b....  (2 of 3 changes kept, undone)'
      H.wait(5000, function()
        return vim.tbl_contains(H.chat_lines(), undone_line)
      end, 'the edit marked undone, live:\n' .. table.concat(H.chat_lines(), '\n'))
      H.contains(H.chat_lines(), '▸ ✓ calc/calc.go  (completed)', 'the read, with its title')
      local live = transcript(H)
      H.contains(live, '/tidy briefly', 'the command as typed, live')

      H.reload()
      local replayed = transcript(H)
      H.log('the replayed chat:\n' .. table.concat(H.chat_lines(), '\n'))
      H.eq(live, replayed, 'the replay shows what the live session showed')
      H.ok(not table.concat(H.chat_lines(), '\n'):find('package calc', 1, true), 'not the expanded prompt')
    end,
  },
}
