-- Inline review of qwen/proposeEdit: hunks as extmarks, per-hunk decisions,
-- edit-the-proposal, reject with feedback, a new file, and cancellation.
-- A review arrives without moving the person; :QwenReview opens it.
local ORIGINAL = nil

-- The review keys as typed: <localleader> is \ by default.
local K = {
  accept = '\\a',
  reject = '\\r',
  accept_all = '\\A',
  edit = '\\e',
  feedback = '\\f',
}

local function start_edit(H, script)
  local ws = H.workspace()
  ORIGINAL = H.read(ws .. '/calc/calc.go')
  H.model(script or 'edit-two-hunks.txtar')
  H.setup()
  vim.cmd('edit calc/calc.go')
  H.wait_client()
  H.type_prompt('Shorten the Add comment and make Scale take a percentage')
  local r = H.wait_review()
  vim.cmd('QwenReview')
  return ws, r
end

local function buf_lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

-- vim.ui.input answering text, recording the prompt it was asked with.
local function answer_input(text)
  local asked = {}
  vim.ui.input = function(opts, cb)
    table.insert(asked, opts.prompt)
    vim.schedule(function()
      cb(text)
    end)
  end
  return asked
end

-- The chat's line for the edit call_edit1 of the review scripts.
local EDIT_LINE = 'calc/calc.go: // Add returns the sum of a an... => // Add returns a + b....'

-- The chat line that starts with prefix, or nil.
local function chat_line(H, prefix)
  for i, l in ipairs(H.chat_lines()) do
    if l:sub(1, #prefix) == prefix then
      return l, i
    end
  end
end

return {
  {
    name = 'review: the proposal shows as extmarks, one group per hunk; accept one, reject the other',
    run = function(H)
      local ws, r = start_edit(H)
      local buf = vim.fn.bufnr(ws .. '/calc/calc.go')
      H.eq(buf, r.buf, 'the review is in the file buffer')
      H.eq(buf, vim.api.nvim_get_current_buf(), ':QwenReview focused the file')
      H.eq(ORIGINAL, require('qwen.util').buf_text(buf), 'the review does not change the buffer')
      H.eq(false, vim.bo[buf].modified, 'the buffer is unchanged')
      H.eq(2, #r.hunks, 'two hunks')
      -- the deleted lines are highlighted, the new lines are virtual lines
      local deleted = {}
      for _, m in ipairs(H.marks(buf)) do
        if m[4].hl_group == 'QwenReviewDelete' then
          table.insert(deleted, { m[2], m[4].end_row })
        end
      end
      H.eq({ { 2, 2 }, { 11, 11 } }, deleted, 'deleted rows (0-based start, end)')
      local vl = H.virt_lines(buf)
      H.contains(vl, 'qwen: hunk 1/2 pending', 'hunk 1 header')
      H.contains(vl, 'qwen: hunk 2/2 pending', 'hunk 2 header')
      H.contains(vl, '// Add returns a + b.', 'hunk 1 new line')
      -- tabs expanded so the virtual line lines up with the buffer's text
      H.contains(vl, '+ ' .. string.rep(' ', vim.bo[buf].tabstop * 2) .. 'out[i] = p * factor / 100', 'hunk 2 new line')
      H.eq('qwen: review: 2 hunks [default] · scripted', require('qwen').statusline(), 'statusline while reviewing')
      H.contains(H.virt_lines(buf), '\\a accept · \\r reject', 'the header names the keys as typed')
      -- with the cursor off every hunk, the keys decide nothing
      vim.api.nvim_win_set_cursor(0, { 6, 0 })
      H.feed(K.accept)
      H.eq({ 'pending', 'pending' }, { r.hunks[1].state, r.hunks[2].state }, 'no hunk decided from line 6')
      -- accept hunk 1 with the cursor on it; the cursor stays, ]h goes on
      vim.api.nvim_win_set_cursor(0, { 3, 0 })
      H.feed(K.accept)
      H.eq(3, vim.api.nvim_win_get_cursor(0)[1], 'deciding does not move the cursor')
      H.contains(H.virt_lines(buf), 'qwen: hunk 1/2 accepted', 'hunk 1 shown as accepted')
      H.eq('qwen: review: 1 hunk [default] · scripted', require('qwen').statusline(), 'one hunk left')
      H.feed(']h')
      H.eq(12, vim.api.nvim_win_get_cursor(0)[1], ']h goes to hunk 2')
      H.feed(K.reject)
      local res = H.wait_turn()
      H.eq('end_turn', res.stopReason, 'stop reason')
      local want = ORIGINAL:gsub('// Add returns the sum of a and b%.', '// Add returns a + b.')
      H.eq(want, require('qwen.util').buf_text(buf), 'the buffer holds exactly the accepted change')
      H.eq(true, vim.bo[buf].modified, 'the buffer is unsaved')
      H.eq(ORIGINAL, H.read(ws .. '/calc/calc.go'), 'the disk is untouched')
      H.eq({}, H.marks(buf), 'the review marks are gone')
      local told = H.ok(H.tool_result('call_edit1'), 'the edit result sent to the model')
      H.contains(told, 'applied only 1 of the 2 proposed changes', 'the model is told about the partial apply')
      H.contains(told, 'original lines 12', 'the model is told which hunk was rejected')
      -- one undo takes the agent's change back
      vim.api.nvim_set_current_buf(buf)
      vim.cmd('silent undo')
      H.eq(ORIGINAL, require('qwen.util').buf_text(buf), 'one u undoes the applied edit')
    end,
  },
  {
    name = 'review: the keys leave c{motion} and operator prefixes to Vim (ciw, ci(, a cr plugin map)',
    run = function(H)
      -- a plugin's operator map on cr, as vim-abolish has (crs: snake_case)
      local abolish = 0
      vim.keymap.set('n', 'crs', function()
        abolish = abolish + 1
      end)
      H.defer(function()
        pcall(vim.keymap.del, 'n', 'crs')
      end)
      local ws, r = start_edit(H)
      local buf = r.buf
      local function starts_operator(lhs)
        return lhs:match('^[cdyg=<>!zZ]') ~= nil
      end
      local ours = 0
      for _, m in ipairs(vim.api.nvim_buf_get_keymap(buf, 'n')) do
        if (m.desc or ''):find('qwen', 1, true) or (m.rhs or ''):find('qwen', 1, true) then
          ours = ours + 1
          H.ok(not starts_operator(m.lhs), 'a review key starting with an operator: ' .. m.lhs)
        end
      end
      H.eq(9, ours, 'the buffer-local review keys')
      for _, m in ipairs(vim.api.nvim_get_keymap('n')) do
        if (m.desc or ''):find('qwen', 1, true) then
          H.ok(m.lhs:match('^<Plug>') ~= nil, 'global qwen maps are <Plug> only: ' .. m.lhs)
        end
      end
      -- (Neovim's own defaults map some g and z keys, so only c is asked)
      for _, prefix in ipairs({ 'ca', 'cA', 'ce', 'cf', 'cq', 'cR' }) do
        H.eq('', vim.fn.mapcheck(prefix, 'n'), 'no mapping starting with ' .. prefix)
      end
      -- Vim's own c{motion} edits the text as in any buffer
      vim.api.nvim_win_set_cursor(0, { 4, 5 }) -- "func Add(a, b int) int {", on Add
      H.feed('ciwSum<Esc>')
      H.eq('func Sum(a, b int) int {', vim.api.nvim_buf_get_lines(buf, 3, 4, false)[1], 'ciw')
      vim.api.nvim_win_set_cursor(0, { 4, 10 }) -- inside the parentheses
      H.feed('ci(x int<Esc>')
      H.eq('func Sum(x int) int {', vim.api.nvim_buf_get_lines(buf, 3, 4, false)[1], 'ci(')
      H.feed('crs')
      H.eq(1, abolish, "the plugin's crs ran")
      vim.cmd('silent undo 0')
      H.eq(ORIGINAL, require('qwen.util').buf_text(buf), 'undone')
      H.eq({ 'pending', 'pending' }, { r.hunks[1].state, r.hunks[2].state }, 'no hunk decided by c{motion}')
      -- the review keys still work afterwards
      vim.api.nvim_win_set_cursor(0, { 3, 0 })
      H.feed(K.accept_all)
      H.wait_turn()
      H.contains(require('qwen.util').buf_text(buf), '// Add returns a + b.', 'accepted')
    end,
  },
  {
    name = 'review: navigate, accept all, one u undoes both hunks',
    run = function(H)
      local ws, r = start_edit(H)
      local buf = r.buf
      vim.api.nvim_win_set_cursor(0, { 1, 0 })
      H.feed(']h')
      H.eq(3, vim.api.nvim_win_get_cursor(0)[1], ']h goes to hunk 1')
      H.feed(']h')
      H.eq(12, vim.api.nvim_win_get_cursor(0)[1], ']h goes to hunk 2')
      H.feed(']h')
      H.eq(12, vim.api.nvim_win_get_cursor(0)[1], ']h stops at the last hunk (no wrapping)')
      H.feed('[h')
      H.eq(3, vim.api.nvim_win_get_cursor(0)[1], '[h goes back to hunk 1')
      H.feed('[h')
      H.eq(3, vim.api.nvim_win_get_cursor(0)[1], '[h stops at the first hunk')
      H.feed(K.accept_all)
      H.wait_turn()
      local text = require('qwen.util').buf_text(buf)
      H.contains(text, '// Add returns a + b.', 'hunk 1 applied')
      H.contains(text, 'out[i] = p * factor / 100', 'hunk 2 applied')
      H.eq(ORIGINAL, H.read(ws .. '/calc/calc.go'), 'the disk is untouched')
      vim.api.nvim_set_current_buf(buf)
      vim.cmd('silent undo')
      H.eq(ORIGINAL, require('qwen.util').buf_text(buf), 'one u undoes the whole edit')
    end,
  },
  {
    name = 'review: edit the proposal; its text becomes finalText',
    run = function(H)
      local ws, r = start_edit(H)
      local buf = r.buf
      H.feed(K.edit)
      local eb = H.ok(r.edit_buf, 'an edit buffer')
      H.eq(eb, vim.api.nvim_get_current_buf(), 'the edit buffer is focused')
      local lines = buf_lines(eb)
      H.eq('// Add returns a + b.', lines[3], 'the proposal in the edit buffer')
      lines[12] = '\t\tout[i] = p * factor / 100 // percent'
      vim.api.nvim_buf_set_lines(eb, 0, -1, false, lines)
      vim.cmd('write')
      H.wait_turn()
      local text = require('qwen.util').buf_text(buf)
      H.contains(text, '// Add returns a + b.', 'hunk 1 applied')
      H.contains(text, 'out[i] = p * factor / 100 // percent', 'the user edit applied')
      H.eq(ORIGINAL, H.read(ws .. '/calc/calc.go'), 'the disk is untouched')
      local told = H.ok(H.tool_result('call_edit1'), 'the edit result')
      H.contains(told, '// percent', 'the model sees the user-modified text')
      H.ok(not vim.api.nvim_buf_is_valid(eb), 'the edit buffer is gone')
    end,
  },
  {
    name = 'review: reject with feedback off every hunk rejects the whole edit',
    run = function(H)
      local ws, r = start_edit(H)
      local buf = r.buf
      local asked = answer_input('keep factor a multiplier')
      vim.api.nvim_win_set_cursor(0, { 6, 0 }) -- on no hunk
      H.feed(K.feedback)
      H.wait_turn()
      H.eq({ 'Why reject this edit? ' }, asked, 'vim.ui.input asked about the whole edit')
      H.eq(ORIGINAL, require('qwen.util').buf_text(buf), 'the buffer is unchanged')
      H.eq(false, vim.bo[buf].modified, 'the buffer is not modified')
      local told = H.ok(H.tool_result('call_edit1'), 'the edit result')
      H.contains(told, 'The user rejected the proposed change', 'a rejection')
      H.contains(told, "The user's feedback: keep factor a multiplier", 'the feedback')
      H.ok(chat_line(H, '▸ ✗ ' .. EDIT_LINE .. '  (rejected)'), 'the chat line says rejected:\n' .. table.concat(H.chat_lines(), '\n'))
    end,
  },
  {
    name = 'review: reject with feedback after accepting a hunk keeps it and rejects only the rest',
    run = function(H)
      local ws, r = start_edit(H)
      local buf = r.buf
      local asked = answer_input('keep factor a multiplier')
      vim.api.nvim_win_set_cursor(0, { 3, 0 })
      H.feed(K.accept)
      vim.api.nvim_win_set_cursor(0, { 6, 0 }) -- on no hunk: the undecided ones
      H.feed(K.feedback)
      H.wait_turn()
      H.eq({ 'Why reject the 1 undecided hunk? ' }, asked, 'vim.ui.input asked about the rest')
      local want = ORIGINAL:gsub('// Add returns the sum of a and b%.', '// Add returns a + b.')
      H.eq(want, require('qwen.util').buf_text(buf), 'the accepted hunk is applied, the other is not')
      local told = H.ok(H.tool_result('call_edit1'), 'the edit result')
      H.contains(told, "The user applied only 1 of the 2 proposed changes; the changes at original lines 12-12 (the user's reason: keep factor a multiplier) were rejected and not applied; those at original lines 3-3 were applied.", 'the model is told both hunks and the reason')
      H.ok(chat_line(H, '▸ ✓ ' .. EDIT_LINE .. '  (1 of 2 changes kept)'), 'the chat line:\n' .. table.concat(H.chat_lines(), '\n'))
    end,
  },
  {
    name = 'review: accept one hunk and reject another with a reason; the model, the file and the chat say so, live and after a reload',
    run = function(H)
      local ws, r = start_edit(H, 'edit-three-hunks.txtar')
      local buf = r.buf
      H.eq(3, #r.hunks, 'three hunks')
      local asked = answer_input('keep the comment as it is')
      vim.api.nvim_win_set_cursor(0, { 3, 0 })
      H.feed(K.accept)
      H.feed(']h')
      H.eq(8, vim.api.nvim_win_get_cursor(0)[1], ']h goes to hunk 2')
      H.feed(K.feedback)
      H.wait(3000, function()
        return r.hunks[2].state == 'rejected'
      end, 'hunk 2 to be rejected')
      H.eq({ 'Why reject hunk 2/3? ' }, asked, 'vim.ui.input asked about the hunk')
      H.eq({ 'accepted', 'rejected', 'pending' }, { r.hunks[1].state, r.hunks[2].state, r.hunks[3].state }, 'only hunk 2 rejected; hunk 1 still accepted')
      H.contains(H.virt_lines(buf), 'qwen: hunk 2/3 rejected: keep the comment as it is', 'the hunk shows its reason')
      H.ok(require('qwen.review').reviews[r.id], 'the review is still open')
      H.feed(']h')
      H.feed(K.accept)
      local res = H.wait_turn()
      H.eq('end_turn', res.stopReason, 'stop reason')
      local want = ORIGINAL:gsub('// Add returns the sum of a and b%.', '// Add returns a + b.'):gsub('out%[i%] = p %* factor\n', 'out[i] = p * factor / 100\n')
      H.eq(want, require('qwen.util').buf_text(buf), 'the buffer holds exactly the kept hunks')
      H.ok(require('qwen.util').buf_text(buf):find('multiplies every price by factor', 1, true), 'the rejected hunk is not applied')
      local told = H.ok(H.tool_result('call_edit1'), 'the edit result')
      H.contains(told, "The user applied only 2 of the 3 proposed changes; the changes at original lines 8-8 (the user's reason: keep the comment as it is) were rejected and not applied; those at original lines 3-3, 12-12 were applied.", 'the model is told each hunk and the reason')
      local line = '▸ ✓ ' .. EDIT_LINE .. '  (2 of 3 changes kept)'
      local _, at = chat_line(H, line)
      H.ok(at, 'the chat line says what happened:\n' .. table.concat(H.chat_lines(), '\n'))
      H.ok(not chat_line(H, 'Review: '), 'the review line is gone once decided')
      local chat = require('qwen.chat')
      chat.toggle_at(at)
      local expanded = table.concat(H.chat_lines(), '\n')
      H.contains(expanded, 'lines 8-8: rejected (keep the comment as it is)', 'the expanded line gives each hunk')
      H.contains(expanded, 'lines 3-3: kept', 'and the kept ones')
      local live = H.chat_lines()

      -- A new qwen-ls, as after restarting Neovim, loads the session.
      H.reload()
      local _, again = chat_line(H, line)
      H.ok(again, 'the replay says the same:\n' .. table.concat(H.chat_lines(), '\n'))
      chat.toggle_at(again)
      H.contains(table.concat(H.chat_lines(), '\n'), 'lines 8-8: rejected (keep the comment as it is)', 'the replay keeps each hunk')
      H.ok(vim.tbl_contains(live, '## You'), 'the live prompt')
      H.eq(1, #vim.tbl_filter(function(l)
        return l == 'Shorten the Add comment and make Scale take a percentage'
      end, H.chat_lines()), 'the replayed prompt')
    end,
  },
  {
    name = 'review: closing the review with :q rejects it',
    run = function(H)
      local ws, r = start_edit(H)
      local buf = r.buf
      vim.cmd('vsplit | enew')
      vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
      vim.cmd('quit')
      local res = H.wait_turn()
      H.eq(ORIGINAL, require('qwen.util').buf_text(buf), 'the buffer is unchanged')
      H.eq(ORIGINAL, H.read(ws .. '/calc/calc.go'), 'the disk is untouched')
      -- a rejection without feedback ends the turn (tools.md 5.3): the
      -- model is not asked again, and the edit line shows it failed
      H.eq('end_turn', res.stopReason, 'stop reason')
      H.eq(2, #H.requests(), 'model requests')
      H.contains(H.chat_lines(), '▸ ✗ calc/calc.go: // Add returns the sum of a an... => // Add returns a + b....  (rejected)', 'the rejected edit line')
    end,
  },
  {
    name = 'review: a new file opens as a scratch preview',
    run = function(H)
      local ws = H.start('new-file.txtar', 'main.go')
      H.type_prompt('Add a test for Add')
      local r = H.wait_review()
      H.eq(true, r.new_file, 'a new file')
      H.eq(-1, vim.fn.bufwinid(r.buf), 'the preview is not shown until asked')
      vim.cmd('QwenReview')
      local name = vim.api.nvim_buf_get_name(r.buf)
      H.contains(name, 'qwen-new://' .. ws .. '/calc/calc_test.go', 'the preview name')
      H.eq(r.buf, vim.api.nvim_get_current_buf(), 'the preview is focused')
      H.eq('func TestAdd(t *testing.T) {', buf_lines(r.buf)[5], 'the preview text')
      H.contains(H.virt_lines(r.buf), 'qwen: hunk 1/1 pending', 'the header')
      H.ok(not H.exists(ws .. '/calc/calc_test.go'), 'nothing written before the decision')
      H.feed(K.accept)
      H.wait_turn()
      H.contains(H.read(ws .. '/calc/calc_test.go') or '', 'func TestAdd(t *testing.T) {', 'the new file on disk')
      H.ok(not vim.api.nvim_buf_is_valid(r.buf), 'the preview is gone')
    end,
  },
  {
    name = 'review: cancelling the turn dismisses an open review',
    run = function(H)
      local ws, r = start_edit(H)
      local buf = r.buf
      vim.cmd('QwenCancel')
      local res = H.wait_turn()
      H.eq('cancelled', res.stopReason, 'stop reason')
      H.wait(3000, function()
        return #require('qwen.review').list() == 0
      end, 'the review to be dismissed')
      H.eq({}, H.marks(buf), 'no review marks')
      H.eq(ORIGINAL, require('qwen.util').buf_text(buf), 'the buffer is unchanged')
      H.eq(ORIGINAL, H.read(ws .. '/calc/calc.go'), 'the disk is untouched')
      H.eq('', vim.fn.maparg(K.accept, 'n'), 'the review keymaps are gone')
      H.eq('qwen: idle [default] · scripted', require('qwen').statusline(), 'statusline')
    end,
  },
}
