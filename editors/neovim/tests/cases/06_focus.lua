-- Focus belongs to the person: a review that arrives while they type in
-- the chat takes nothing from them. The person is a second, real Neovim
-- whose keys arrive one burst at a time, in Insert mode, through its own
-- input queue, as a terminal's keys do.
local function child_state(H, chan)
  return H.child_lua(chan, [[
    local chat = require('qwen.chat')
    local file = vim.fn.bufnr(...)
    local r = require('qwen.review').list()[1]
    return {
      mode = vim.api.nvim_get_mode().mode,
      in_input = vim.api.nvim_get_current_buf() == chat.input,
      input = table.concat(vim.api.nvim_buf_get_lines(chat.input, 0, -1, false), '\n'),
      file = file ~= -1 and require('qwen.util').buf_text(file) or '',
      modified = file ~= -1 and vim.bo[file].modified or false,
      review = r and r.shown and #r.hunks or 0,
      busy = require('qwen.session').busy,
      statusline = require('qwen').statusline(),
      chat = table.concat(chat.lines(), '\n'),
      wins = #vim.api.nvim_tabpage_list_wins(0),
      tabs = #vim.api.nvim_list_tabpages(),
    }
  ]], H.ws .. '/calc/calc.go')
end

return {
  {
    name = 'focus: typing on in the chat while an edit review arrives; the file gets none of it',
    run = function(H)
      local ws = H.workspace()
      local original = H.read(ws .. '/calc/calc.go')
      H.model('edit-two-hunks.txtar')
      local chan = H.child()
      -- the person has the file open, then opens the chat (Insert mode)
      H.child_lua(chan, [[
        vim.cmd('edit calc/calc.go')
        vim.cmd('QwenChat')
      ]])
      H.wait(10000, function()
        local c = H.child_lua(chan, [[
          local c = require('qwen.client').current(false)
          return c ~= nil and require('qwen.client').is_ready(c.id)
        ]])
        return c
      end, 'the child to start qwen-ls')
      H.eq('i', H.child_lua(chan, 'return vim.api.nvim_get_mode().mode'), ':QwenChat opens ready to type')
      -- n, o, d, x, c, u, p and : are Normal-mode commands: none may run
      local words = { 'now ', 'open ', 'do ', 'extra ', 'careful ', 'undo ', 'paste ', 'x:y ' }
      local typed, k = {}, 0
      local timer = vim.loop.new_timer()
      local stop = false
      timer:start(0, 10, vim.schedule_wrap(function()
        if stop then
          return
        end
        k = k + 1
        local w = words[(k - 1) % #words + 1]
        table.insert(typed, w)
        vim.rpcnotify(chan, 'nvim_input', w)
      end))
      H.wait(5000, function()
        return k >= 20
      end, 'some typing')
      -- a prompt goes out (sent earlier, or from another window); the person
      -- goes on typing the next one
      H.child_lua(chan, [[require('qwen.session').prompt('Shorten the Add comment and make Scale take a percentage')]])
      local t0 = vim.loop.hrtime()
      local at_review
      H.wait(20000, function()
        local st = child_state(H, chan)
        if st.review > 0 and not at_review then
          at_review = k
          H.log(string.format('review arrived after %d keystroke bursts, %d ms', k, (vim.loop.hrtime() - t0) / 1e6))
        end
        -- keep typing well past the review's arrival
        return at_review ~= nil and k >= at_review + 40
      end, 'the review to arrive while typing')
      stop = true
      timer:stop()
      timer:close()
      local want = table.concat(typed)
      H.log(string.format('%d bursts, %d characters typed', #typed, #want))
      local st
      -- every key read by the child (or lost elsewhere: then the checks
      -- below say where)
      vim.wait(5000, function()
        st = child_state(H, chan)
        return #st.input >= #want
      end, 10)
      H.eq(want, st.input, 'the chat input holds everything typed')
      H.eq(original, st.file, 'the reviewed file, byte for byte, before any decision')
      H.eq(false, st.modified, 'the reviewed file is unmodified')
      H.eq('i', st.mode, 'still in Insert mode')
      H.eq(true, st.in_input, 'still in the chat input')
      H.eq(1, st.tabs, 'no tab opened')
      H.contains(st.statusline, 'review: 2 hunks', 'the statusline says a review waits')
      H.contains(st.chat, 'Review: calc/calc.go (2 hunks) -- :QwenReview', 'the chat says where the review is')
      local notes = H.child_lua(chan, 'return _G.notified')
      local announced = 0
      for _, n in ipairs(notes) do
        H.ok(n.level < vim.log.levels.ERROR, 'no error in the child: ' .. n.msg)
        if n.msg:find('review calc/calc.go (2 hunks)', 1, true) then
          announced = announced + 1
        end
      end
      H.eq(1, announced, 'the review announced once')
      -- the person decides from where they are: only that reaches the file
      H.child_lua(chan, [[vim.cmd('QwenReview accept-all')]])
      H.wait(15000, function()
        return not child_state(H, chan).busy
      end, 'the turn to end')
      st = child_state(H, chan)
      local accepted = original
        :gsub('// Add returns the sum of a and b%.', '// Add returns a + b.')
        :gsub('out%[i%] = p %* factor\n', 'out[i] = p * factor / 100\n')
      H.ok(accepted ~= original, 'the expected text differs from the original')
      H.eq(accepted, st.file, 'the file holds exactly the accepted edit')
      H.eq(want, st.input, 'the chat input still holds everything typed')
      H.eq(true, st.in_input, 'still in the chat input after the decision')
    end,
  },
  {
    name = 'focus: a permission question that arrives while the person types waits for <Esc>',
    run = function(H)
      local ws = H.workspace()
      H.trust()
      H.model('shell-permission.txtar')
      local chan = H.child()
      H.child_lua(chan, [[
        _G.asked = {}
        vim.ui.select = function(items, opts, cb)
          table.insert(_G.asked, { mode = vim.api.nvim_get_mode().mode, labels = vim.tbl_map(opts.format_item, items) })
          _G.answer = function(id)
            for _, o in ipairs(items) do
              if o.optionId == id then
                return cb(o)
              end
            end
          end
        end
        vim.cmd('edit main.go')
        vim.cmd('QwenChat')
      ]])
      H.wait(10000, function()
        return H.child_lua(chan, [[
          local c = require('qwen.client').current(false)
          return c ~= nil and require('qwen.client').is_ready(c.id)
        ]])
      end, 'the child to start qwen-ls')
      H.child_lua(chan, [[require('qwen.session').prompt('Create the marker file')]])
      -- digits and y would answer a prompt that read keys (inputlist)
      local words = { 'yes ', '1 ', '2 ', 'ok ' }
      local typed, k, stop = {}, 0, false
      local timer = vim.loop.new_timer()
      timer:start(0, 10, vim.schedule_wrap(function()
        if stop then
          return
        end
        k = k + 1
        local w = words[(k - 1) % #words + 1]
        table.insert(typed, w)
        vim.rpcnotify(chan, 'nvim_input', w)
      end))
      local at
      H.wait(20000, function()
        if not at and H.child_lua(chan, [[return require('qwen.permission').held()]]) > 0 then
          at = k
        end
        return at ~= nil and k >= at + 30
      end, 'the question to arrive while typing')
      stop = true
      timer:stop()
      timer:close()
      local want = table.concat(typed)
      vim.wait(5000, function()
        return #H.child_lua(chan, [[return table.concat(vim.api.nvim_buf_get_lines(require('qwen.chat').input, 0, -1, false), '\n')]]) >= #want
      end, 10)
      local st = H.child_lua(chan, [[return {
        asked = #_G.asked,
        input = table.concat(vim.api.nvim_buf_get_lines(require('qwen.chat').input, 0, -1, false), '\n'),
        statusline = require('qwen').statusline(),
        mode = vim.api.nvim_get_mode().mode,
      }]])
      H.eq(0, st.asked, 'not asked while typing')
      H.eq(want, st.input, 'the chat input holds everything typed')
      H.eq('i', st.mode, 'still in Insert mode')
      H.contains(st.statusline, 'waiting for you', 'the statusline says a question waits')
      H.ok(not H.exists(ws .. '/created-by-agent.txt'), 'the command has not run')
      -- the person stops typing: now it is asked, with the server's labels
      vim.rpcnotify(chan, 'nvim_input', '<Esc>')
      H.wait(5000, function()
        return H.child_lua(chan, 'return #_G.asked') == 1
      end, 'the question after <Esc>')
      local asked = H.child_lua(chan, 'return _G.asked[1]')
      H.eq('n', asked.mode, 'asked in Normal mode')
      H.ok(#asked.labels >= 4, 'every option offered: ' .. vim.inspect(asked.labels))
      H.child_lua(chan, [[_G.answer('proceed_once')]])
      H.wait(15000, function()
        return not H.child_lua(chan, [[return require('qwen.session').busy]])
      end, 'the turn to end')
      H.ok(H.exists(ws .. '/created-by-agent.txt'), 'the command ran once allowed')
    end,
  },
  {
    name = 'focus: a setup error that comes back while the person types is shown when they stop',
    run = function(H)
      H.workspace()
      local tcp = vim.loop.new_tcp()
      assert(tcp:bind('127.0.0.1', 0))
      local port = tcp:getsockname().port
      tcp:close()
      local chan = H.child({ OPENAI_BASE_URL = string.format('http://127.0.0.1:%d/v1', port) })
      H.child_lua(chan, [[
        vim.cmd('edit main.go')
        vim.cmd('QwenChat')
      ]])
      H.wait(10000, function()
        return H.child_lua(chan, [[
          local c = require('qwen.client').current(false)
          return c ~= nil and require('qwen.client').is_ready(c.id)
        ]])
      end, 'the child to start qwen-ls')
      H.child_lua(chan, [[require('qwen.session').prompt('hello')]])
      local typed = {}
      for i = 1, 30 do
        local w = 'next prompt ' .. i .. ' '
        table.insert(typed, w)
        vim.rpcnotify(chan, 'nvim_input', w)
        vim.wait(10, function() return false end, 5)
      end
      H.wait(10000, function()
        return not H.child_lua(chan, [[return require('qwen.session').busy]])
      end, 'the turn to fail')
      local want = table.concat(typed)
      vim.wait(5000, function()
        return #H.child_lua(chan, [[return table.concat(vim.api.nvim_buf_get_lines(require('qwen.chat').input, 0, -1, false), '\n')]]) >= #want
      end, 10)
      local function errors()
        local n = {}
        for _, m in ipairs(H.child_lua(chan, 'return _G.notified')) do
          if m.level >= vim.log.levels.ERROR then
            table.insert(n, m.msg)
          end
        end
        return n
      end
      H.eq(0, #errors(), 'no error shown while typing')
      H.eq(want, H.child_lua(chan, [[return table.concat(vim.api.nvim_buf_get_lines(require('qwen.chat').input, 0, -1, false), '\n')]]), 'the input holds everything typed')
      H.contains(H.child_lua(chan, [[return table.concat(require('qwen.chat').lines(), '\n')]]), 'model.baseUrl', 'the chat explains at once')
      vim.rpcnotify(chan, 'nvim_input', '<Esc>')
      H.wait(5000, function()
        return #errors() == 1
      end, 'the error after <Esc>')
      H.contains(errors()[1], 'model.baseUrl', 'the setting to change')
    end,
  },
}
