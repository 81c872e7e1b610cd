-- Commands of qwen.nvim. They load the plugin's modules only when used;
-- call require('qwen').setup{...} to configure it and to start qwen-ls
-- with the first file buffer.
if vim.g.loaded_qwen then
  return
end
vim.g.loaded_qwen = true

local function q()
  return require('qwen')
end

local cmd = vim.api.nvim_create_user_command

cmd('QwenChat', function()
  q().chat()
end, { desc = 'Open the qwen chat' })

cmd('QwenAsk', function(o)
  local range = nil
  if o.range and o.range > 0 then
    range = { o.line1, o.line2 }
  end
  q().ask(o.args, range)
end, { nargs = '+', range = true, desc = 'Ask qwen (with a range: about those lines)' })

cmd('QwenCancel', function()
  q().cancel()
end, { desc = 'Cancel the running qwen turn' })

cmd('QwenMode', function(o)
  q().mode(o.args)
end, {
  nargs = 1,
  complete = function()
    return require('qwen.client').approval_modes()
  end,
  desc = 'Set the approval mode',
})

cmd('QwenSessions', function()
  q().sessions()
end, { desc = 'List and resume qwen sessions' })

cmd('QwenNewSession', function()
  q().new_session()
end, { desc = 'Start a new qwen session in the chat' })

cmd('QwenUndoTurn', function()
  q().undo_turn()
end, { desc = 'Undo last agent turn' })

cmd('QwenReview', function(o)
  q().review(o.args)
end, {
  nargs = '?',
  complete = function()
    return { 'open', 'accept-all', 'reject-all', 'accept-hunk', 'reject-hunk', 'next-hunk', 'prev-hunk', 'edit-proposal', 'reject-with-feedback', 'close-review' }
  end,
  desc = 'Open the edit waiting for review, or decide it',
})

cmd('QwenModel', function(o)
  q().model(o.args)
end, {
  nargs = '?',
  complete = function(arglead)
    return require('qwen.model').complete(arglead)
  end,
  desc = 'Choose the model of the qwen session (no argument: pick from a list)',
})

cmd('Qwen', function(o)
  q().command(o.args)
end, {
  nargs = '*',
  complete = function(arglead, cmdline, pos)
    return require('qwen.commands').complete_cmdline(arglead, cmdline, pos)
  end,
  desc = 'Run a qwen slash command: :Qwen stats sends /stats (no argument: /help)',
})

cmd('QwenStats', function()
  q().stats()
end, { desc = 'Show the qwen session\'s model and token totals' })
