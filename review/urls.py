from django.urls import path

from review import dashboard, views, views_withdraw

urlpatterns = [
    path("review/", views.queue, name="review-queue"),
    path("review/layers/<int:layer_id>/take-next/", views.take_next, name="review-take-next"),
    path("review/assignments/<int:assignment_id>/release/", views.release, name="review-release"),
    path("tasks/<int:task_id>/edit/submit/", views.workspace_submit, name="workspace-submit"),
    path("tasks/<int:task_id>/review/", views.review_task, name="review-task"),
    path("tasks/<int:task_id>/assign/", views.assign, name="review-assign"),
    path(
        "review/decisions/<int:decision_id>/withdraw/",
        views_withdraw.withdraw,
        name="review-decision-withdraw",
    ),
    path("tasks/<int:task_id>/timeline/", views.timeline, name="task-timeline"),
    path("tasks/<int:task_id>/comments/", views.comment_add, name="comment-add"),
    path("comments/<int:comment_id>/resolve/", views.comment_resolve, name="comment-resolve"),
    path("notifications/", views.notifications, name="notifications"),
    path("projects/<int:project_id>/pipeline/", views.pipeline, name="review-pipeline"),
    path("projects/<int:project_id>/dashboard/", dashboard.dashboard, name="review-dashboard"),
]
