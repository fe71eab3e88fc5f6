// English and Chinese. Keys are the English text; a missing translation shows the English.

const ZH = {
  Notes: "笔记", Search: "搜索", Graph: "图谱", Review: "回顾", Status: "状态", Chat: "对话",
  "Search the memory…": "搜索记忆…", Workspace: "工作区", New: "新建", Edit: "编辑", Move: "移动",
  Delete: "删除", Save: "保存", Cancel: "取消", Confirm: "确认", Close: "关闭",
  Daily: "日记", Digest: "知识", Resources: "资源", Sessions: "会话", Imports: "导入", Other: "其他",
  "Front matter": "属性", Outlinks: "出链", Backlinks: "反链", "Dead links": "死链",
  "no links": "没有链接", "dead link": "死链", "Open": "打开", Lines: "行", Score: "得分",
  "No results.": "没有结果。", Runs: "运行记录", Agenda: "今日议程", Audit: "摘要审计",
  Captures: "捕获的会话", Resolve: "解决", Suppress: "不再提醒", Revert: "撤销", "Force revert": "强制撤销",
  "Revert this run?": "撤销这次运行？", "will restore": "将恢复", "will delete": "将删除",
  "will skip": "将跳过", Reindex: "重建索引",
  Components: "组件", Index: "索引", Configuration: "配置", "Pending vectors": "待嵌入向量",
  Ask: "提问", "Ask about your memory…": "询问你的记忆…", "Tool calls": "工具调用", Cited: "引用", "Unverified citations": "未经核实的引用", "not read": "未读取", "no such note": "无此笔记",
  Tokens: "令牌", "Conflict: the file changed since you opened it.": "冲突：打开后文件已被修改。",
  "Your version": "你的版本", "Version on disk": "磁盘上的版本", "Save mine over it": "用我的版本覆盖",
  "Keep the disk version": "保留磁盘版本", Saved: "已保存", "Path of the new note": "新笔记路径",
  "Move to": "移动到", "inbound link(s) will be rewritten": "条入链将被改写",
  "inbound link(s) point here and will become dead": "条入链指向此处，删除后将成为死链",
  "link(s) rewritten": "条链接已改写", Deleted: "已删除", Buckets: "分桶", Sources: "来源",
  Depth: "深度", Since: "起始日期", Nodes: "节点", Edges: "边", "Nothing to review yet.": "暂无内容。",
  "No topics today.": "今天没有议题。", Findings: "发现", Actions: "动作", Diffs: "差异",
  "Revert done": "已撤销", Restored: "已恢复", Skipped: "已跳过", Theme: "主题", Language: "语言",
  Live: "实时", Shortcuts: "快捷键", Loading: "加载中", "Load more": "加载更多", Failed: "失败",
  "Later changes to these files will be lost:": "这些文件之后的修改将丢失：", Usage: "用量",
  "Index progress": "索引进度", "Recent captures": "最近捕获", "Select a note in the tree.": "在左侧选择一条笔记。",
  "Nothing here.": "这里没有内容。", "Pending cards": "待处理卡片", "Distil pending cards": "提炼待处理卡片",
  "Session cards left pending (no model, or a failed call) are distilled again by auto_memory_pending.": "未完成提炼的会话卡片（无模型或调用失败）由 auto_memory_pending 重新提炼。", "Recent changes": "最近变更", Embedded: "嵌入", Focus: "聚焦", All: "全部",
  "Every capture is saved.": "所有捕获均已保存。", "Failed captures": "失败的捕获", "Pending captures": "待保存的捕获",
  "Saved with records skipped": "已保存（跳过了损坏记录）", failed: "失败", queued: "排队于", ago: "前", Retry: "重试",
  Drop: "放弃", "Retry all": "全部重试", "or run": "或运行", "Drop this capture?": "放弃这次捕获？",
  "Its transcript is not saved further; what was saved stays.": "不再继续保存其记录；已保存的部分保留。",
  keyword: "关键词", vector: "向量", "Recent errors": "最近错误", "No job failed since the service started.": "服务启动以来没有失败的任务。",
};

let lang = localStorage.getItem("reme-lang") || (navigator.language.startsWith("zh") ? "zh" : "en");

export function t(text) {
  return lang === "zh" ? ZH[text] || text : text;
}

export function language() {
  return lang;
}

export function setLanguage(next) {
  lang = next;
  localStorage.setItem("reme-lang", next);
  document.documentElement.lang = next === "zh" ? "zh-CN" : "en";
}
