-- :checkhealth qwen, :QwenMode, :QwenSessions, :QwenUndoTurn.
return {
  {
    name = 'health: :checkhealth qwen reports the binary, its version, the model and Neovim',
    run = function(H)
      H.workspace()
      -- any scripted answer will do for the one-token request
      H.model('chat.txtar')
      H.setup()
      vim.cmd('silent checkhealth qwen')
      local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
      H.contains(text, 'qwen-ls 0.', 'the version')
      H.contains(text, 'scripted at ' .. H.current_model.url .. ' answered in', 'the model tried with one real request')
      local reqs = H.requests()
      H.eq(1, #reqs, 'one request to the model')
      H.eq(0, #(reqs[1].tools or {}), 'a request without tools')
      H.contains(text, 'Neovim 0.', 'the Neovim version')
      H.contains(text, 'sandbox: ', 'which sandbox confines commands')
      H.ok(not text:find('ERROR', 1, true), 'no errors:\n' .. text)
      H.ok(not text:find('sk-test', 1, true), 'the key never shown')
    end,
  },
  {
    name = 'health: no model configured is an error that says what to set',
    allow_errors = true,
    run = function(H)
      H.workspace()
      vim.opt.runtimepath:prepend(H.plugin)
      vim.cmd('runtime plugin/qwen.lua')
      vim.cmd('cd ' .. vim.fn.fnameescape(H.ws))
      -- no model in the environment or the settings
      local none = { HOME = H.home, OPENAI_API_KEY = '', OPENAI_BASE_URL = '', DASHSCOPE_API_KEY = '', OPENAI_MODEL = '' }
      require('qwen').setup({ cmd = { H.bin, '--stdio' }, cmd_env = none })
      vim.cmd('silent checkhealth qwen')
      local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
      H.contains(text, 'ERROR', 'an error: nothing can work')
      H.contains(text, 'model.name', 'the setting to set')
      H.contains(text, 'OPENAI_API_KEY', 'the variable to set')
      H.eq('qwen: no model', require('qwen').statusline(), 'the statusline says no model, not idle')
    end,
  },
  {
    name = 'commands: QwenMode sets the approval mode, QwenSessions resumes a session',
    run = function(H)
      H.start('unsaved-read.txtar', 'main.go')
      vim.cmd('QwenAsk What does main.go do?')
      H.wait_turn()
      vim.cmd('QwenMode auto-edit')
      H.wait(5000, function()
        return require('qwen').statusline() == 'qwen: idle [auto-edit] · scripted'
      end, 'the statusline to show auto-edit')
      -- The modes offered are the ones the server's initialize result lists.
      H.eq({ 'default', 'plan', 'auto-edit', 'yolo' }, vim.fn.getcompletion('QwenMode ', 'cmdline'), 'completion lists the server modes')
      local qc = vim.lsp.get_client_by_id(require('qwen.session').client_id).server_capabilities.experimental.qwen
      local advertised = qc.approvalModes
      qc.approvalModes = { 'default', 'plan' }
      H.eq({ 'default', 'plan' }, vim.fn.getcompletion('QwenMode ', 'cmdline'), 'completion follows the server list')
      qc.approvalModes = advertised
      local session = require('qwen.session')
      local first = session.session_id
      vim.cmd('QwenNewSession')
      H.eq({ '' }, H.chat_lines(), 'a new session clears the chat')
      local offered
      vim.ui.select = function(items, opts, cb)
        offered = vim.tbl_map(opts.format_item, items)
        for _, s in ipairs(items) do
          if s.sessionId == first then
            return cb(s)
          end
        end
      end
      vim.cmd('QwenSessions')
      H.wait(5000, function()
        return offered ~= nil
      end, 'the session list')
      H.contains(offered, 'What does main.go do?', 'the session title')
      for _, item in ipairs(offered) do
        H.ok(not item:find('%d%d%d%d%-%d%d%-%d%dT%d'), 'no raw ISO time in ' .. item)
      end
      H.contains(offered, 'What does main.go do?  (just now)', 'a local, relative time')
      H.wait(5000, function()
        return table.concat(H.chat_lines(), '\n'):find('I read main.go as it is in your editor.', 1, true) ~= nil
      end, 'the session to be replayed')
      H.eq(first, session.session_id, 'the chat is on the resumed session')
      H.contains(H.chat_lines(), 'What does main.go do?', 'the replayed prompt')
    end,
  },
  {
    name = 'commands: QwenUndoTurn puts back what the last turn changed, in one undoable step',
    run = function(H)
      local ws = H.workspace()
      local original = H.read(ws .. '/calc/calc.go')
      H.model('edit-two-hunks.txtar')
      H.setup()
      vim.cmd('edit calc/calc.go')
      H.wait_client()
      H.type_prompt('Shorten the Add comment and make Scale take a percentage')
      local r = H.wait_review()
      -- a hunk action needs the cursor on a hunk: not from elsewhere
      vim.cmd('QwenReview accept-hunk')
      H.eq({ 'pending', 'pending' }, { r.hunks[1].state, r.hunks[2].state }, 'no hunk decided from another buffer')
      -- decided from where the person is, without opening the file
      H.ok(vim.api.nvim_get_current_buf() ~= r.buf, 'the reviewed file is not the current buffer')
      vim.cmd('QwenReview accept-all')
      H.wait_turn()
      local util = require('qwen.util')
      H.contains(util.buf_text(r.buf), 'out[i] = p * factor / 100', 'the edit applied')
      local got
      require('qwen.session').undo_turn(function(err, res)
        got = { err = err, res = res }
      end)
      H.wait(5000, function()
        return got ~= nil
      end, 'the qwen/revertTurn answer')
      H.eq(nil, got.err, 'revertTurn error')
      H.eq(1, #got.res.restored, 'one file restored')
      H.eq(0, #got.res.conflicts, 'no conflicts')
      H.eq(original, util.buf_text(r.buf), 'the buffer holds the text from before the turn')
      H.eq(original, H.read(ws .. '/calc/calc.go'), 'the disk is untouched')
      H.contains(table.concat(H.chat_lines(), '\n'), 'restored calc/calc.go', 'the chat says what was restored')
    end,
  },
  {
    name = 'commands: QwenUndoTurn after a turn that changed nothing says so',
    run = function(H)
      H.start('unsaved-read.txtar', 'main.go')
      vim.cmd('QwenAsk What does main.go do?')
      H.wait_turn()
      local got
      require('qwen.session').undo_turn(function(err, res)
        got = { err = err, res = res }
      end)
      H.wait(5000, function()
        return got ~= nil
      end, 'the qwen/revertTurn answer')
      H.ok(got.err, 'an error: nothing to undo')
      H.eq(-32602, got.err.code, 'invalid params: no turn to revert')
      H.contains(table.concat(H.chat_lines(), '\n'), 'could not undo the last turn', 'the message')
    end,
  },
}
